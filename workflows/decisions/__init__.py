"""Pure, table-tested functions named after what they decide (KubeRay's decisions)."""
