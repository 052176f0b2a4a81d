"""A real single-node SLURM cluster on 127.0.0.1, for the cluster test tier (``make
test-cluster``): munge, MariaDB, slurmdbd, slurmctld and slurmd from Debian's packages, each
started in the foreground by this module, its PID kept and stopped by that PID whatever happens.

The configuration sits where Debian's Slurm was built to look (``/etc/slurm/slurm.conf``): the
job-step plugin removes every ``SLURM_*`` variable before its nested ``srun``, so a cluster
configured through ``SLURM_CONF`` fails inside every job. A file there that this module did not
write is never overwritten. The node's name, CPUs and memory are the machine's (``slurmd -C``).

Run as root (CI's machine). ``python -m tests.cluster.slurm_cluster install`` installs the
packages where missing; ``stop <state folder>`` stops whatever a crashed session left running.
The configuration files it wrote are removed when the cluster stops.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Debian 12's packages of the cluster (Slurm 22.05, munge, MariaDB).
PACKAGES = ("slurm-wlm", "slurmctld", "slurmd", "slurmdbd", "slurm-client", "munge",
            "mariadb-server", "mariadb-client")
#: The programs those packages give.
PROGRAMS = ("slurmctld", "slurmd", "slurmdbd", "sbatch", "sacctmgr", "munged", "mariadbd",
            "mariadb-install-db")
CONF_DIR = Path("/etc/slurm")
MARK = "# written by postrisk's cluster test (tests/cluster/slurm_cluster.py)"
CLUSTER = "postrisk-ci"
ACCOUNT = "postrisk-ci"
#: A finished job stays in slurmctld's memory this long (seconds): long enough for the executor
#: plugin's squeue status queries (three times its first status interval, 40 s).
MIN_JOB_AGE = 300
PIDS_FILE = "pids"


class ClusterError(RuntimeError):
    """The cluster could not be set up or started; the message says which step and its log."""


def install_packages() -> None:
    """Debian's packages of the cluster, where a program is missing (apt-get, as root)."""
    if all(shutil.which(p) for p in PROGRAMS):
        return
    if os.geteuid() != 0:
        raise ClusterError("the cluster test installs Debian's Slurm packages and starts its "
                           "daemons: run it as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
                   check=True, env=env)


def node_line() -> str:
    """``NodeName=… CPUs=… RealMemory=…`` of this machine, as slurmd reads it."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    line = out.splitlines()[0]
    # leave a little memory to the daemons and the submit host
    memory = int(re.search(r"RealMemory=(\d+)", line).group(1))
    return re.sub(r"RealMemory=\d+", f"RealMemory={int(memory * 0.9)}", line)


#: The configuration files this module writes (and removes again when its cluster stops).
CONF_FILES = ("slurm.conf", "gres.conf", "slurmdbd.conf")


def remove_conf() -> None:
    """The configuration files this module wrote (a file it did not write stays): a cluster
    configuration left behind would make every later Slurm command on the machine try to reach
    a controller that is gone, and hide a missing step on a machine that starts fresh."""
    for name in CONF_FILES:
        path = CONF_DIR / name
        if path.exists() and MARK in path.read_text(errors="replace"):
            path.unlink()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_conf(path: Path, text: str, mode: int = 0o644) -> None:
    if path.exists() and MARK not in path.read_text(errors="replace"):
        raise ClusterError(f"{path} exists and was not written by this test: a real "
                           "cluster's configuration is never overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MARK + "\n" + text)
    path.chmod(mode)


@dataclass
class SlurmCluster:
    """The cluster's state folder (logs, spool, database) and the daemons it started."""

    state: Path
    accounting: bool = True
    pids: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    db_port: int = 0

    # -- configuration ---------------------------------------------------------------------

    @property
    def node(self) -> str:
        return node_line().split()[0].split("=", 1)[1]

    def slurm_conf(self) -> str:
        storage = ("AccountingStorageType=accounting_storage/slurmdbd\n"
                   "AccountingStorageHost=127.0.0.1\n"
                   "AccountingStorageEnforce=associations,limits\n"
                   if self.accounting else "AccountingStorageType=accounting_storage/none\n")
        node = self.node
        return f"""ClusterName={CLUSTER}
SlurmctldHost={node}(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation={self.state}/ctld
SlurmdSpoolDir={self.state}/spool
SlurmctldPidFile={self.state}/slurmctld.pid
SlurmdPidFile={self.state}/slurmd.pid
SlurmctldLogFile={self.state}/slurmctld.log
SlurmdLogFile={self.state}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
MinJobAge={MIN_JOB_AGE}
InactiveLimit=0
KillWait=5
OverTimeLimit=0
SchedulerType=sched/backfill
{storage}GresTypes=gpu
{node_line()} Gres=gpu:1 NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=cpu Nodes={node} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes={node} MaxTime=INFINITE State=UP
"""

    def gres_conf(self) -> str:
        # a GPU the scheduler counts (the machine has none: jobs asking for one are placed, and
        # the workflow's own check stops one whose JAX sees no GPU)
        return f"NodeName={self.node} Name=gpu File=/dev/null Count=1\n"

    def slurmdbd_conf(self) -> str:
        return f"""DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
AuthType=auth/munge
PidFile={self.state}/slurmdbd.pid
LogFile={self.state}/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.db_port}
StorageUser=slurm
StoragePass=postrisk-ci
StorageLoc=slurm_acct_db
"""

    # -- daemons ---------------------------------------------------------------------------

    def _start(self, name: str, cmd: list[str], user: str | None = None) -> None:
        log = open(self.state / f"{name}.out", "ab")  # noqa: SIM115 (the daemon's stdout)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, user=user)
        self.procs[name] = proc
        self.pids[name] = proc.pid
        (self.state / PIDS_FILE).write_text(
            "".join(f"{n} {p}\n" for n, p in self.pids.items()))

    def _stop(self, name: str, timeout: float = 20) -> None:
        pid = self.pids.pop(name, None)
        proc = self.procs.pop(name, None)
        if pid is None:
            return
        _kill(pid, timeout, proc)
        (self.state / PIDS_FILE).write_text(
            "".join(f"{n} {p}\n" for n, p in self.pids.items()))

    def _wait_for(self, what: str, check, log: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self.procs.get(what)
            if proc is not None and proc.poll() is not None:
                break
            if check():
                return
            time.sleep(0.5)
        tail = _tail(self.state / log)
        raise ClusterError(f"{what} did not come up within {timeout:.0f} s; {log}:\n{tail}")

    def _start_munge(self) -> None:
        for folder in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
            Path(folder).mkdir(parents=True, exist_ok=True)
            shutil.chown(folder, "munge", "munge")
        self._start("munged", ["munged", "-F", "--force"], user="munge")
        self._wait_for("munged", lambda: _ok(["munge", "-n"]), "munged.out")

    def _start_database(self) -> None:
        data = self.state / "mysql"
        if not data.exists():
            _run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                  "--auth-root-authentication-method=socket"], self.state / "mysql-init.out")
        self.db_port = self.db_port or _free_port()
        sock = self.state / "mysqld.sock"
        self._start("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={data}",
                                 f"--socket={sock}", f"--port={self.db_port}",
                                 "--bind-address=127.0.0.1", "--user=root",
                                 f"--pid-file={self.state}/mariadbd.pid",
                                 "--innodb-buffer-pool-size=64M"])
        client = ["mariadb", f"--socket={sock}", "-uroot"]
        self._wait_for("mariadbd", lambda: _ok([*client, "-e", "select 1"]), "mariadbd.out")
        sql = ("CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'postrisk-ci';"
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
        _run([*client, "-e", sql], self.state / "mysql-init.out")

    def start_accounting(self) -> None:
        """slurmdbd (and its database): the accounting most sites run."""
        if "mariadbd" not in self.pids:
            self._start_database()
        _write_conf(CONF_DIR / "slurmdbd.conf", self.slurmdbd_conf(), mode=0o600)
        self._start("slurmdbd", ["slurmdbd", "-D"])
        self._wait_for("slurmdbd", lambda: _ok(["sacctmgr", "-n", "show", "cluster"]),
                       "slurmdbd.log")

    def start_controller(self) -> None:
        self._start("slurmctld", ["slurmctld", "-D", "-c"])
        self._wait_for("slurmctld", lambda: _ok(["scontrol", "ping"]) and _up(),
                       "slurmctld.log")

    def restart_controller(self) -> None:
        """slurmctld stopped (SIGTERM: it saves its state) and started again on that state."""
        self._stop("slurmctld")
        self._start("slurmctld", ["slurmctld", "-D"])
        self._wait_for("slurmctld", lambda: _ok(["scontrol", "ping"]), "slurmctld.log")

    def start_node(self) -> None:
        self._start("slurmd", ["slurmd", "-D", "-N", self.node])
        self._wait_for("slurmd", _node_idle, "slurmd.log")

    def register_account(self) -> None:
        """The cluster, an account and this user in the accounting database (sacctmgr)."""
        user = _user()
        _run(["sacctmgr", "-i", "add", "cluster", CLUSTER], self.state / "sacctmgr.out",
             ok_if="already exists")
        _run(["sacctmgr", "-i", "add", "account", ACCOUNT, f"cluster={CLUSTER}",
              "description=postrisk CI"], self.state / "sacctmgr.out", ok_if="already exists")
        _run(["sacctmgr", "-i", "add", "user", user, f"account={ACCOUNT}",
              f"cluster={CLUSTER}"], self.state / "sacctmgr.out", ok_if="already exists")

    def start(self) -> SlurmCluster:
        """Everything, in order; on a failure, what was started is stopped again."""
        install_packages()
        self.state.mkdir(parents=True, exist_ok=True)
        for sub in ("ctld", "spool"):
            (self.state / sub).mkdir(exist_ok=True)
        try:
            _write_conf(CONF_DIR / "slurm.conf", self.slurm_conf())
            _write_conf(CONF_DIR / "gres.conf", self.gres_conf())
            self._start_munge()
            if self.accounting:
                self.start_accounting()
                self.register_account()
            self.start_controller()
            self.start_node()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Every daemon this cluster started, by PID, the node and controller first."""
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            self._stop(name)
        for name in list(self.pids):
            self._stop(name)
        remove_conf()

    def stop_accounting(self) -> None:
        """A site without accounting: slurmdbd stopped, the controller restarted with
        ``accounting_storage/none`` (its saved jobs kept)."""
        self._stop("slurmdbd")
        self.accounting = False
        _write_conf(CONF_DIR / "slurm.conf", self.slurm_conf())
        self.restart_controller()

    def log_tails(self) -> str:
        return "\n".join(f"--- {p.name}\n{_tail(p)}" for p in sorted(self.state.glob("*.log")))


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def _ok(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _up() -> bool:
    return _ok(["sinfo"])


def _node_idle() -> bool:
    out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout
    return "idle" in out or "mix" in out or "alloc" in out


def _run(cmd: list[str], log: Path, ok_if: str | None = None) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True)
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    if result.returncode != 0 and not (ok_if and ok_if in result.stdout + result.stderr):
        raise ClusterError(f"{' '.join(cmd)} failed ({result.returncode}):\n"
                           f"{result.stdout}{result.stderr}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _kill(pid: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds; the process group too."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if proc is not None:
                if proc.poll() is not None:
                    return
            elif not Path(f"/proc/{pid}").exists():
                return
            time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_from_file(state: Path) -> None:
    """Stop the daemons a cluster recorded in ``state/pids`` (a session that crashed), and
    remove the configuration it wrote."""
    pids = state / PIDS_FILE
    if pids.exists():
        for line in reversed(pids.read_text().splitlines()):
            _name, pid = line.split()
            _kill(int(pid), 20)
        pids.unlink()
    remove_conf()


if __name__ == "__main__":
    if sys.argv[1:2] == ["install"]:
        install_packages()
    elif sys.argv[1:2] == ["stop"]:
        stop_from_file(Path(sys.argv[2]))
    else:
        sys.exit("usage: python -m tests.cluster.slurm_cluster install | stop <state folder>")
