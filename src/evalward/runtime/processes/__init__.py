"""What the kernel says of the machine's processes (Linux: /proc, cgroup v2): the processes
a run started and left running, each run's cgroup, which processes hold a socket, a loopback
port or a run's key. `isolation` acts on what is found here."""
