"""Counts the file and directory fsyncs in an `strace -y` trace of one
collect (used by bench-collect.sh and bench-oci.sh).

Usage: count-fsyncs.py TRACE FILE_FLOOR DIR_FLOOR LABEL
"""
import os
import re
import sys

trace, file_floor, dir_floor, label = sys.argv[1:5]
files = dirs = 0
for line in open(trace):
    m = re.search(r'(?:fsync|fdatasync|sync_file_range)\(\d+<([^>]*)>', line)
    if not m:
        continue
    # The fd's path (-y): a file if it is one now or was a temp file (gone
    # by now: renamed into place); anything else was a directory (a run's
    # temp directories are gone too).
    p = m.group(1)
    base = os.path.basename(p)
    if os.path.isfile(p) or base.startswith((".tmp-", "put-")):
        files += 1
    else:
        dirs += 1
print(f'{label}: {files} file + {dirs} directory (floor: {file_floor} + {dir_floor})')
