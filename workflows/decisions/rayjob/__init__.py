"""What the RayJob workflow decides: pure, table-tested functions named after their decision."""
