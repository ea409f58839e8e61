"""What the RayService workflow decides: pure, table-tested functions named after their decision."""
