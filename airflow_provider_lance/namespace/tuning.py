"""Every tuning constant of the engine, each with the measurement it came from (or, plainly, that none did).

A tuning constant trades speed or memory and never changes an answer: a test may lower one to reach a code path
with a small catalog (``monkeypatch.setattr(<module>, NAME, ...)`` on the module that imports it). Measurements
are from ``docs/benchmarks.md``, ``CHANGELOG.md`` and the commits named; "not measured" says a value is a
judgement. Property defaults (``commit_retries``, the maintenance policy) are in config.py: they are a user's
choice, documented in docs/engine.md's property table.
"""

from __future__ import annotations

from datetime import timedelta

# -- rows in memory (row_index.py) ------------------------------------------------------------------------
# The longest tail merged at once: its scans cost microseconds, a merge one pass over the base (d0ae427).
TAIL_ROWS = 4096
# Rows read whole are sorted at once up to this many: a few milliseconds; the sort of 2,000,000 rows took
# half a second, which a sensor's poke should not pay (7931491, docs/engine.md "Rows in memory").
SORT_AT_ONCE = 1 << 16
# Lookups that scan an unsorted version before it is sorted: a scan ~10 ms, the sort ~0.5 s at a million
# tables; 8 keeps a task's few calls sort-free (d0ae427).
SORT_AFTER = 8
# Appends to the tail are combined into one chunk past this many: a scan pays per chunk (not measured).
TAIL_CHUNKS = 32
# Namespaces whose tail children an index keeps sorted: a list page 0.4-1.1 ms -> 0.04 ms with 200-1,480 new
# tables (f1d7525); 8 covers a few clients listing at once (not measured beyond that).
TAIL_LISTINGS = 8
# Ids a listing walk reads at a time, doubling from the first to the last: a page of 1,000 at a million tables
# 1,933 -> 0.66 ms (92b513d; the window sizes themselves not measured separately).
FIRST_WINDOW = 64
LAST_WINDOW = 4096
# Tables whose version lines an index keeps (describes, pokes and commits of the same tables between commits);
# a line costs ~0.1 ms at 100 versions, ~0.4 ms at 10,000 to build (issue 29, docs/benchmarks.md "Large catalogs
# in managed mode"; the bound itself not measured).
VERSION_LINES = 1024
# Manifests after the rows' latest version looked for one ``stat`` (S3: HEAD) at a time before listing
# ``_versions/`` instead: versions written round the namespace are rare, and a listing of 10,000 names cost
# ~15-25 ms (issue 29; the bound itself not measured).
NEWER_PROBES = 8
# Rowed versions a managed answer checks on storage one ``stat`` (S3: HEAD, concurrently) at a time before
# listing ``_versions/`` instead (issue 37: a clean-up may have removed their manifests). A page of 20 is 19
# ``stat``s locally (~0.2 ms; the latest row is not checked); a listing of 10,000 names costs ~15-25 ms.
VERIFY_PROBES = 32
# The largest ``__manifest`` fragment a managed commit's repoint rewrites whole (the commit point's own fragment
# holds its rows: an Update instead of pylance's merge-insert, ~17 ms per append at 40 tables x 25 versions);
# a larger one (a compaction merged the row into it) gets a deletion vector (not measured separately).
SMALL_FRAGMENT_ROWS = 256

# -- obtaining a version's rows (snapshots.py) --------------------------------------------------------------
# Rows per batch of a full read: few chunks (a derived version lists every chunk) and no slower to read than
# Lance's default of 8,192 (not measured beyond that).
SCAN_BATCH_ROWS = 1 << 17
# A version of at least this many rows that nobody read yet answers its first lookups by point reads: ~25 ms
# at 2,000,000 rows where a whole read costs ~100 ms and ~100 MB; the first answer at a million tables
# 162 -> 41 ms, VmRSS growth 165 -> 59 MB (80fe7a2, docs/engine.md "Rows in memory").
POINT_READ_ROWS = 1 << 16
# Point reads before the version is read whole: the whole read costs about as much as four of them (same).
POINT_READS = 4
# Local and memory stores: the longest "no manifest N+1" is trusted without a full listing; also the shortest
# clean-up window maintenance accepts (readers rely on it). A bound on a rare miss, not measured.
REVALIDATE_AFTER = timedelta(minutes=2)
# A directory mtime is a "nothing changed" stamp only once this old: file system timestamps are coarse (ext4
# and tmpfs tick at the kernel's clock, up to 10 ms; 2 s covers FAT and network file systems; not measured).
SETTLED_NANOS = 2_000_000_000

# -- stored rows (rows_store.py) ------------------------------------------------------------------------------
# Rows-store entries a machine keeps per catalog: only the newest is read; a few cover processes that read
# the versions just before it (not measured).
LOCAL_ROWS_KEEP = 4
# The most rows a commit writes an S3 rows object for (property ``manifest_rows_object_max_rows``): ~3 KB at
# 100 rows, 150 KB at 10,000, ~0.8 MB at 50,000; a cold first poke 2-3 requests instead of 6-7 at 100 tables
# and 10-11 at 10,000 (docs/engine.md "A new process on S3").
ROWS_OBJECT_MAX_ROWS = 50_000

# -- writers (writers_turn.py, group_commit.py, manifest.py) ---------------------------------------------------
# The one bound on every wait for the writers' turn (a group's leader, the instance turn, the machine turn):
# the holder may be blocked on what the waiter holds (a pylance callback holding the pylance pool thread the
# holder's commit needs; a stuck process), and going ahead is safe (guarded appends; conflicts are retried).
# A commit takes 2-10 ms (docs/benchmarks.md "Writers"), so 2 s is hundreds of commits: never reached by
# turns that work. (Before issue 28: 2 s in-process, 5 s for the machine turn, neither measured.)
TURN_WAIT_SECONDS = 2.0
# Between attempts to take a busy machine turn: short and randomised, so that waiters do not convoy.
TURN_POLL_SECONDS = (0.0001, 0.001)
# Rows of one group commit at most: a commit of a few thousand rows costs about as much as one of a single
# row; 32 threads declaring through one instance 141 -> 640 writes/s (700314c, CHANGELOG "Group commit").
MAX_GROUP_ROWS = 4096
# How often pylance retries a merge-insert (a rename, BatchCommitTables) before the engine re-reads and
# retries it: pylance rebases it over other writers' inserts of other ids (not measured).
MERGE_INSERT_RETRIES = 2
# The first back-off after a lost commit, doubled per attempt up to 2^5 times, randomised (de-synchronised
# retries; not measured).
COMMIT_BACKOFF_SECONDS = 0.002

# -- maintenance (maintenance.py) -----------------------------------------------------------------------------
# Retries of a compaction in the writers' turn (it loses to any concurrent commit; not measured).
COMPACTION_RETRIES = 2
# Compaction leaves fragments of this many rows alone: at a million tables the mean declare 40 -> 3.2 ms (a
# 270 ms rewrite of every row on every 8th commit; CHANGELOG, docs/engine.md "Rows in memory").
LARGE_FRAGMENT_ROWS = 65_536
# ... unless this share of their rows is deleted (not measured).
DELETED_SHARE = 0.1

# -- vended credentials (credentials.py) ----------------------------------------------------------------------
# Cached credentials before expired ones are forgotten (one scan per doubling; not measured).
CREDENTIALS_PRUNE_AT = 4096

# -- threads (concurrency.py) --------------------------------------------------------------------------------
# Threads of the engine's one pool: callbacks from pylance and a batch's storage requests; 16 concurrent S3
# requests keep a batch network-bound (not measured against other sizes).
WORKERS = 16
