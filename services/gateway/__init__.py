"""The gateway: the one URL OpenRLHF points at; routes, composes and reports."""
