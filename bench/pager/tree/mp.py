#!/usr/bin/python3
# Python multiprocessing (fork) over a large list: issue 32's PSS case.
import multiprocessing as mp, sys
N = int(sys.argv[1])
data = list(range(N))
def part(k):
    return sum(data[k::8])
if __name__ == '__main__':
    with mp.get_context('fork').Pool(4) as pool:
        r = pool.map(part, range(8))
    assert sum(r) == N * (N - 1) // 2, 'wrong sum'
    print(sum(r))
