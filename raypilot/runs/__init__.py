"""The client side of raypilot's workflows: starting and updating runs, and looking them up. Shared by the
`raypilot` commands and `raypilot controller`, so neither imports the other."""
