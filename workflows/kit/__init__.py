"""What both workflows use to reach the world: typed activity calls with one policy per kind of I/O
(`calls`), and one way to wait on several watches and a timer (`waits`)."""
