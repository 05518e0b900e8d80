"""The learning loop: mine what no pattern extracted, induce candidates, score, gate and write them back.

A subsystem package: it imports the core (parse, record, ...) and the core never imports it.
"""
