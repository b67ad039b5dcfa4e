"""The sandbox: one confined process per submission (bubblewrap, seccomp, a cgroup), and the data-only wire to it."""
