#!/usr/bin/env bash
# Which objects do several worker threads of a running sidecar retain and release? Each such
# operation is an atomic write to the object's header: on an object the workers share, the
# write takes the cache line from whichever core wrote it last, a cost per request that grows
# with the number of workers and that a profile of one worker (callgrind) cannot show.
#
#   Benchmarks/shared-objects.sh PID [SECONDS]     # while the sidecar serves load (wrk)
#
# Puts uprobes on swift_retain and swift_release of the process's binary (perf, as root),
# records SECONDS [0.5] of their calls, and prints, per object that more than one thread
# touched, its type (the symbol of its metadata, from the binary's symbol table) and the
# operations per thread; then the types of all objects by operations. Immortal objects (the
# empty array) are only read, never written: listed, but harmless. The uprobes slow the
# process down a lot while they record; they are removed at the end.
set -euo pipefail
pid=${1:?usage: shared-objects.sh PID [SECONDS]}; seconds=${2:-0.5}
command -v perf >/dev/null || { echo "perf is needed (apt-get install linux-perf)" >&2; exit 1; }
binary=$(readlink -f "/proc/$pid/exe")
work=$(mktemp -d); trap 'perf probe -q -d "probe_sidecar:*" 2>/dev/null || true; rm -rf "$work"' EXIT
perf probe -q -d 'probe_sidecar:*' 2>/dev/null || true
perf probe -q -x "$binary" --add 'swift_retain obj=%di:u64'
perf probe -q -x "$binary" --add 'swift_release obj=%di:u64'
perf record -q -e probe_sidecar:swift_retain -e probe_sidecar:swift_release -p "$pid" -o "$work/rc.data" \
  -- sleep "$seconds" 2>/dev/null
perf script -i "$work/rc.data" -F tid,trace 2>/dev/null >"$work/calls.txt"
nm "$binary" >"$work/symbols.txt"
python3 - "$pid" "$binary" "$work" <<'EOF' | { swift demangle --simplified --compact 2>/dev/null || cat; }
import bisect, collections, re, struct, sys
pid, binary, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
maps = open(f'/proc/{pid}/maps').read().splitlines()
base = min(int(l.split('-')[0], 16) for l in maps if l.endswith(binary))
symbols = []
for line in open(f'{work}/symbols.txt'):
    parts = line.split()
    if len(parts) == 3:
        try: symbols.append((int(parts[0], 16), parts[2]))
        except ValueError: pass
symbols.sort(); starts = [s[0] for s in symbols]
memory = open(f'/proc/{pid}/mem', 'rb')
def type_of(address):
    try:
        memory.seek(address); metadata = struct.unpack('<Q', memory.read(8))[0]
    except (OSError, struct.error):
        return '(freed)'
    i = bisect.bisect_right(starts, metadata - base) - 1
    return symbols[i][1] if i >= 0 else '(unknown)'
per_object = collections.defaultdict(collections.Counter)
for line in open(f'{work}/calls.txt'):
    m = re.match(r'\s*(\d+)\s.*obj=(\d+)', line)
    if m and m.group(2) != '0':
        per_object[int(m.group(2))][m.group(1)] += 1
threads = collections.Counter()
for counts in per_object.values(): threads.update(counts)
total = sum(threads.values())
print(f'{total} retains and releases on {len(per_object)} objects by {len(threads)} threads')
shared = sorted(((sum(c.values()), o, c) for o, c in per_object.items() if sum(1 for n in c.values() if n > 5) > 1), reverse=True)
print(f'objects more than one thread retained and released: {len(shared)}, '
      f'{sum(s[0] for s in shared)} operations ({100.0 * sum(s[0] for s in shared) / max(total, 1):.1f} %)')
for n, o, c in shared[:20]:
    print(f'  {n:8d}  {hex(o)}  {type_of(o)}  per thread: {dict(c.most_common())}')
by_type = collections.Counter()
for o, c in per_object.items(): by_type[type_of(o)] += sum(c.values())
print('all objects, by type:')
for t, n in by_type.most_common(15): print(f'  {n:8d}  {100.0 * n / total:5.1f} %  {t}')
EOF
