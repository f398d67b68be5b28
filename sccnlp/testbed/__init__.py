"""The local test bed: Debian 12 systemd+sshd nodes in Docker, GlusterFS shared storage, an ECS API on loopback."""
