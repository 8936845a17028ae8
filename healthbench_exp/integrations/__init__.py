"""Bridges to other frameworks, the top layer beside `cli`: they may import any layer below, and
nothing in the package imports them. Each is an optional extra (`healthbench-exp[verifiers]`)."""
