"""A cluster of hosts on one machine: each host a network namespace of its own, joined by a
bridge, its link to the bridge shaped by tc (HTB each way, netem's delay on the
way out). Ranks on it reach each other by the hosts' addresses over real TCP, as on
separate machines.

Names carry the launcher's pid (sps<pid>h<k> for host k, sps<pid>sw for the switch that
holds the bridge), so a later cluster removes what a killed launcher left behind
(remove_stale). The addresses are the project's own test hosts, 10.200.0.<k+1>/24, and
exist inside the namespaces only: nothing is added to this machine's own network.
"""

import os
import shutil
import subprocess

PREFIX = "sps"
SUBNET = "10.200.0."
IFACE = "eth0"  # every host's interface, as --iface names it
MAX_HOSTS = 250
FRAME_BYTES = 1514  # an Ethernet frame at MTU 1500
MAX_GSO_BYTES = 65536


def missing_tools(latency_ns=0):
    """Why this machine cannot make a cluster (None when it can): it needs root, ip and tc,
    and for a latency tc's netem in the kernel."""
    if os.geteuid() != 0:
        return "--net=netns needs root (it creates network namespaces); run as root or drop it"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"--net=netns needs {tool} (iproute2: apt-get install iproute2)"
    if latency_ns > 0 and not _has_netem():
        return ("--net=netns --latency needs tc's netem, which this kernel lacks "
                "(CONFIG_NET_SCH_NETEM); give --latency=0, or --net=loopback where the Channel "
                "adds the latency")
    return None


def _has_netem():
    probe = f"{PREFIX}{os.getpid()}sw"  # a leftover is removed as a killed cluster's would be
    subprocess.run(["ip", "netns", "add", probe], stderr=subprocess.DEVNULL)
    try:
        return subprocess.run(["tc", "-n", probe, "qdisc", "add", "dev", "lo", "root", "netem",
                               "delay", "1ms"], stderr=subprocess.DEVNULL).returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", probe], stderr=subprocess.DEVNULL)


def _run(argv):
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _owner(name):
    """The launcher pid in a cluster namespace's name, or None for another namespace."""
    if not name.startswith(PREFIX):
        return None
    digits = name[len(PREFIX):].split("h")[0].split("sw")[0]
    return int(digits) if digits.isdigit() else None


def _alive(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"python" in f.read()  # a pid reused by another program owns no cluster
    except OSError:
        return False


def remove_stale():
    """Removes the namespaces of clusters whose launcher is gone; returns their names."""
    stale = [n for n in namespaces() if _owner(n) is not None and not _alive(_owner(n))]
    for name in stale:
        subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)
    return stale


def _shape(ns, dev, bits_per_second, latency_ns):
    """Egress of dev in ns: netem's delay (if any), then the link's rate (if any) through HTB
    with two classes, small packets (pure ACKs, under 128 bytes) ahead of the rest. A host's
    qdisc lets an incoming flow's ACKs past its own outgoing bulk (Debian's fq_codel does, by
    flow); in one FIFO they would wait behind a whole reply, and the sender behind them."""
    tc = ["tc", "-n", ns]
    parent = ["root"]
    if latency_ns > 0:
        _run(tc + ["qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay",
                   f"{latency_ns / 1e3:.0f}us", "limit", "100000"])
        parent = ["parent", "1:"]
    if bits_per_second <= 0:
        return
    rate = int(bits_per_second)
    # A real link has no burst: a message's first frame takes its time like the rest. The
    # bucket holds one packet, and TCP hands the device packets of about 1 ms at the rate
    # (one frame at least, GSO's 64 kB at most): the least burst the timer can keep at the
    # rate. At 1 Mbit/s a 64 kB bucket let a whole small message out at once.
    packet = min(MAX_GSO_BYTES, max(FRAME_BYTES, int(bits_per_second / 8 * 1e-3)))
    burst = str(packet)
    _run(["ip", "-n", ns, "link", "set", "dev", dev, "gso_max_size", str(packet)])
    _run(tc + ["qdisc", "add", "dev", dev] + parent + ["handle", "2:", "htb", "default", "20"])
    klass = tc + ["class", "add", "dev", dev, "parent"]
    _run(klass + ["2:", "classid", "2:1", "htb", "rate", f"{rate}bit", "burst", burst,
                  "cburst", burst])
    for cid, share, prio in (("2:10", 10, "0"), ("2:20", 90, "1")):
        _run(klass + ["2:1", "classid", cid, "htb", "rate", f"{rate * share // 100}bit",
                      "ceil", f"{rate}bit", "burst", burst, "cburst", burst, "prio", prio])
    # IPv4 total length (bytes 2-3 of the header) below 128.
    _run(tc + ["filter", "add", "dev", dev, "parent", "2:", "protocol", "ip", "prio", "1",
               "u32", "match", "u16", "0x0000", "0xff80", "at", "2", "flowid", "2:10"])


class Cluster:
    """hosts network namespaces behind one bridge; every host's link carries
    bits_per_second each way (0: unshaped) and latency_ns on the way out."""

    def __init__(self, hosts, bits_per_second=0, latency_ns=0, owner=None):
        if hosts > MAX_HOSTS:
            raise ValueError(f"--net=netns makes at most {MAX_HOSTS} hosts; asked for {hosts}")
        self.hosts = hosts
        self.owner = owner or os.getpid()
        self.bits_per_second = bits_per_second
        self.latency_ns = latency_ns
        self.switch = f"{PREFIX}{self.owner}sw"

    def host(self, k):
        return f"{PREFIX}{self.owner}h{k}"

    def address(self, k):
        return f"{SUBNET}{k + 1}"

    def exec_prefix(self, k):
        """The argv prefix that runs a program on host k."""
        return ["ip", "netns", "exec", self.host(k)]

    def names(self):
        return [self.switch] + [self.host(k) for k in range(self.hosts)]

    def create(self):
        """Makes the switch and the hosts; on failure removes what it made and raises."""
        try:
            _run(["ip", "netns", "add", self.switch])
            _run(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge"])
            _run(["ip", "-n", self.switch, "link", "set", "br0", "up"])
            for k in range(self.hosts):
                self._add_host(k)
        except Exception:
            self.remove()
            raise

    def _add_host(self, k):
        ns, port = self.host(k), f"h{k}"
        _run(["ip", "netns", "add", ns])
        _run(["ip", "-n", self.switch, "link", "add", port, "type", "veth", "peer", "name",
              IFACE, "netns", ns])
        _run(["ip", "-n", self.switch, "link", "set", port, "master", "br0", "up"])
        _run(["ip", "-n", ns, "addr", "add", f"{self.address(k)}/24", "dev", IFACE])
        _run(["ip", "-n", ns, "link", "set", IFACE, "up"])
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        # The host's uplink leaves through its own interface, its downlink through its port
        # on the switch: a NIC of the given rate in each direction, as the Channel's shaping
        # and the virtual clock model a link.
        _shape(ns, IFACE, self.bits_per_second, self.latency_ns)
        _shape(self.switch, port, self.bits_per_second, 0)

    def remove(self):
        """Deletes every namespace of the cluster (and with them the links and the bridge)."""
        for name in self.names():
            subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)

    def describe(self):
        rate = (f"{self.bits_per_second / 1e6:g} Mbit/s each way (tc htb)"
                if self.bits_per_second else "unshaped")
        delay = f", latency {self.latency_ns / 1e6:g} ms (netem)" if self.latency_ns else ""
        return (f"{self.hosts} netns hosts {self.host(0)}..{self.host(self.hosts - 1)} "
                f"({self.address(0)}..{self.address(self.hosts - 1)}) on a bridge, links "
                f"{rate}{delay}")
