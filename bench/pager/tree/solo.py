#!/usr/bin/python3
# One process, no fork: what the tree scope costs a program that is alone in
# its tree and pages hard (tests/pager/preload-python.sh's list workload):
# run by run.sh under `bypass run --pager 8M,scope=process|tree` with
# BYPASS_PAGER_THRESHOLD=2M.
import random
random.seed(7)
a = list(range(600_000))
b = [x * 3 % 1000003 for x in a]
random.shuffle(a)
c = sorted(b)
d = a + b
print(len(d), sum(a), sum(b), c[:5], c[-5:], a[:5], d[-3:])
