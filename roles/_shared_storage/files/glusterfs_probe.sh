#!/usr/bin/env bash
# Is the GlusterFS volume whole? Asks it what a person would: `gluster volume info`, `volume status`, `volume heal
# VOLUME info summary` and `pool list`, each as XML between `### ` lines (judged by
# plugins/plugin_utils/glusterfs_health.py). Read-only. Through this node's glusterd when it answers (it is a server
# of the volume), else through the server's (--remote-host). Arguments: this node's name, the server, the volume.
set -u
node=$1 server=$2 volume=$3
command -v gluster >/dev/null || { echo "gluster command not found on $(hostname) (package glusterfs-cli)"; exit 0; }
if timeout 20 gluster --mode=script pool list >/dev/null 2>&1; then
  g=(timeout 20 gluster --mode=script); echo "### probe local $node"
else
  g=(timeout 20 gluster --mode=script "--remote-host=$server"); echo "### probe remote $server"
fi
for what in "volume info" "volume status" "volume heal"; do
  echo "### $what $volume"
  if [ "$what" = "volume heal" ]; then
    "${g[@]}" volume heal "$volume" info summary --xml 2>&1
  else
    # shellcheck disable=SC2086 # two words: the sub-command
    "${g[@]}" $what "$volume" --xml 2>&1
  fi
  echo "### rc $?"
done
echo "### pool list"; "${g[@]}" pool list --xml 2>&1; echo "### rc $?"
