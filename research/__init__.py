"""One-off studies: what was tried and measured once, with its report in research/reports/; nothing imports them."""
