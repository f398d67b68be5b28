"""Why mpirun failed, from real recorded outputs (tests/fixtures/tool_outputs/mpirun/, Open MPI 4.1.4 on the test
bed): the message leads with the cause found in the output, never with the tail of Open MPI's help text."""

from __future__ import annotations

import pytest

from plugins.plugin_utils.mpirun_output import failure_cause, outside_help

RANK_HOSTS = ["node1", "node2", "node3"]
CLUSTER_FIX = "Fix: run the cluster phase on every node (`sccnlp deploy -i INVENTORY --playbook cluster`)"
# recorded output -> the start of the cause line
CAUSES = {
    "hostkey_unknown": "host key verification failed: no ED25519 host key of node2 is known on the node that launched "
                       f"mpirun. {CLUSTER_FIX}: it records every node's host keys in /etc/ssh/ssh_known_hosts",
    "hostkey_changed": "the SSH host key of node2 changed: REMOTE HOST IDENTIFICATION HAS CHANGED (the ED25519 key on "
                       "record: /etc/ssh/ssh_known_hosts:6). Fix: if node2 was re-imaged, run `sccnlp node reimaged "
                       "node2 -i INVENTORY`",
    "name_unresolved": "node9 does not resolve (ssh: Could not resolve hostname node9: Name or service not known). "
                       f"{CLUSTER_FIX}: it writes every node into /etc/hosts",
    "ssh_refused": "node2 cannot be reached over SSH on port 22 (Connection refused). Fix: start sshd on node2",
    "no_route": "10.63.0.99 cannot be reached over SSH on port 22 (No route to host). Fix: check that 10.63.0.99 is up",
    "ssh_denied": f"node2 refused the SSH login (Permission denied (publickey,password)). {CLUSTER_FIX}: it authorises "
                  "the cluster key on every node",
    "orted_missing": "Open MPI is not installed on a node of the hostfile (orted: command not found on the remote "
                     "side).",
    "daemon_lost": "mpirun lost contact with its daemon on node3 (the node or its network went away, or the daemon "
                   "was killed).",
    "no_executable": "/opt/nosuch/python cannot be executed on node1 (not found, or not executable).",
    "slots": "the MPI hostfile has fewer slots than the 5 ranks asked for.",
    "as_root": "mpirun refuses to run as root. Fix: pass --allow-run-as-root",
    "rank_failed": "rank 1 on node2 exited with code 3: boom",
    "python_error": "rank 1 on node2 exited with code 1: ModuleNotFoundError: No module named 'nosuchmodule'",
    "signal": "rank 2 on node3 died on signal 11 (Segmentation fault)",
}


@pytest.mark.parametrize("name", sorted(CAUSES))
def test_the_cause_leads(fixture_text, name):
    output = fixture_text("mpirun", f"{name}.txt")
    rc = next(line.split()[-1] for line in fixture_text("mpirun", f"{name}.source.txt").splitlines()
              if line.startswith("Exit status:"))
    cause = failure_cause(output, rc, RANK_HOSTS)
    assert cause.startswith(CAUSES[name]), cause
    assert "apologize" not in cause and "\n" not in cause


def test_the_issue_case_names_the_host_key_not_the_routing_help(fixture_text):
    """What validate and train quoted before: the last lines of the help text after the ssh failure."""
    output = fixture_text("mpirun", "hostkey_unknown.txt")
    assert output.rstrip().splitlines()[-2].endswith("We apologize for the problem.")
    assert "ORTE does not know how to route" not in failure_cause(output, 255)


def test_stdout_and_stderr_in_either_order(fixture_text):
    output = fixture_text("mpirun", "name_unresolved.txt")
    assert failure_cause("node1\nnode3\n" + output, 255).startswith("node9 does not resolve")


def test_without_rank_hosts_the_rank_is_named_alone(fixture_text):
    assert failure_cause(fixture_text("mpirun", "rank_failed.txt"), 3).startswith("rank 1 exited with code 3: boom")


def test_timeout_with_nothing_printed():
    assert failure_cause("", 124) == "mpirun did not finish in time and was stopped (exit 124, nothing printed)"


def test_nothing_printed():
    assert failure_cause("", 1) == "mpirun printed nothing (exit 1)"
    assert failure_cause(None) == "mpirun printed nothing"


def test_an_unknown_failure_gives_its_own_error_line_not_the_help_text():
    output = ("[node1:01883] plm:rsh: Warning: setpgid(1887,1887) failed in parent with errno=Permission denied(13)\n"
              "some_tool: error: the thing broke\n" + "-" * 74 + "\nORTE was unable to reliably start one or more "
              "daemons.\n" + "-" * 74 + "\n")
    assert failure_cause(output, 1) == "some_tool: error: the thing broke"


def test_only_help_text_gives_its_first_sentence():
    output = "-" * 74 + "\nORTE was unable to reliably start one or more daemons.\nThis usually is caused by:\n" + \
             "-" * 74 + "\n"
    assert failure_cause(output, 1) == "ORTE was unable to reliably start one or more daemons."


def test_outside_help():
    assert outside_help(["a", "-" * 30, "help", "-" * 30, "b"]) == ["a", "b"]
