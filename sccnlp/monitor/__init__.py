"""Live monitors run from the controller: `rdma` (per-port RDMA traffic from sysfs counters, local or over ssh)."""
