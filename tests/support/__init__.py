"""What the tests share: running the CLI and the action, git repositories, agent
environments and users, the result cache's database, the suites many tests gate."""
