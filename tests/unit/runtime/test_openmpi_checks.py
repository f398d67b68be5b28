"""The openmpi role's verify (plugins/plugin_utils/openmpi.py) on recorded mpirun and ompi_info output (Open MPI
4.1.4, Debian 12)."""

from __future__ import annotations

from ansible_collections.scc.nlp_training.plugins.plugin_utils import openmpi

VERSION = {"rc": 0, "stdout": "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/",
           "stderr": ""}
# Lines of `ompi_info --all --parsable` (a real run's value lines and a neighbour of each kind).
INFO = [
    "mca:btl:tcp:param:btl_tcp_if_include:value:10.91.0.0/24",
    "mca:btl:tcp:param:btl_tcp_if_include:source:file:/etc/openmpi/openmpi-mca-params.conf",
    "mca:btl:tcp:param:btl_tcp_if_include:status:writeable",
    "mca:plm:rsh:param:plm_rsh_agent:value:ssh",
    "mca:plm:rsh:param:plm_rsh_args:value:-o BatchMode=yes",
    "mca:hwloc:base:param:hwloc_base_binding_policy:value:none",
]
PARAMS = {"btl_tcp_if_include": "10.91.0.0/24", "plm_rsh_agent": "ssh", "plm_rsh_args": "-o BatchMode=yes",
          "hwloc_base_binding_policy": "none"}
MCA = "/etc/openmpi/openmpi-mca-params.conf"


def test_values_of_the_parsable_output() -> None:
    assert openmpi.mca_values(INFO)["plm_rsh_args"] == "-o BatchMode=yes"
    assert "btl_tcp_if_include:source" not in str(openmpi.mca_values(INFO))


def test_version_and_settings_seen() -> None:
    assert openmpi.openmpi_problems("n1", VERSION, "4.1.4", INFO, PARAMS, MCA, "/usr/bin") == []


def test_another_version_first() -> None:
    assert openmpi.openmpi_problems("n1", VERSION, "5.0.6", INFO, PARAMS, MCA, "/usr/bin") == [
        "openmpi on n1: /usr/bin/mpirun --version says 'mpirun (Open MPI) 4.1.4', expected Open MPI 5.0.6. Fix: "
        "remove the other Open MPI from PATH, or set openmpi_version to the version you mean to run."]
    gone = {"rc": 2, "stdout": "", "stderr": "[Errno 2] No such file or directory: b'/opt/openmpi/bin/mpirun'"}
    assert "says '[Errno 2] No such file or directory" in openmpi.openmpi_problems(
        "n1", gone, "4.1.4", [], PARAMS, MCA, "/opt/openmpi/bin")[0]


def test_a_setting_overridden() -> None:
    overridden = [line.replace("value:none", "value:core") for line in INFO]
    assert openmpi.openmpi_problems("n1", VERSION, "4.1.4", overridden, PARAMS, MCA, "/usr/bin") == [
        "openmpi on n1: ompi_info does not show hwloc_base_binding_policy = none as set in "
        "/etc/openmpi/openmpi-mca-params.conf. Fix: check for an OMPI_MCA_* environment variable or another "
        "openmpi-mca-params.conf that overrides it."]


def test_a_local_launch_that_fails() -> None:
    refused = {"rc": 1, "stdout": "", "stderr": "mpirun has detected an attempt to run as root."}
    assert openmpi.openmpi_problems("n1", VERSION, "4.1.4", INFO, PARAMS, MCA, "/usr/bin", launch=refused) == [
        "openmpi on n1: a local launch (/usr/bin/mpirun -np 1 --host localhost hostname) failed (rc 1): mpirun has "
        "detected an attempt to run as root. Fix: check that root may launch (openmpi_allow_run_as_root) and that "
        "the node's own name resolves."]
    assert openmpi.openmpi_problems("n1", VERSION, "4.1.4", INFO, PARAMS, MCA, "/usr/bin",
                                    launch={"rc": 0, "stdout": "clu-node1"}) == []
