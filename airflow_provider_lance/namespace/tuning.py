"""Every tuning constant of the engine, each with the measurement that chose it or, where none did, the bound it
is: what it caps, and why any value in a wide range gives the same answers at about the same cost.

A tuning constant trades speed or memory and never changes an answer: a test may lower one to reach a code path
with a small catalog (``monkeypatch.setattr(<module>, NAME, ...)`` on the module that imports it). Measurements
are from ``docs/benchmarks.md``, ``CHANGELOG.md`` and the commits named. Property defaults (``commit_retries``,
the maintenance policy) are in config.py: they are a user's choice, documented in docs/engine.md's property table.
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
# Bound: appends to the tail are combined into one chunk past this many (a scan pays per chunk: the value caps
# that overhead at 32 chunk hops, never changes an answer).
TAIL_CHUNKS = 32
# A commit's rows up to which the index handles them row by row in Python (their staged-manifest match, their
# place among the tail's sorted ids) rather than in one vectorised call or one sort: one pyarrow call costs
# ~5-15 µs whatever its length, a commit's two rows ~60 µs matched vectorised and ~10 in Python; an insertion
# into 4,096 sorted ids ~3 µs, their sort ~130 µs (issue 42). Any value from 1 to ~64 gives the same answers.
ROWS_IN_PYTHON = 16
# Namespaces whose tail children an index keeps sorted: a list page 0.4-1.1 ms -> 0.04 ms with 200-1,480 new
# tables (f1d7525); bound: 8 namespaces listed at once between merges, a few kilobytes of sorted ids each.
TAIL_LISTINGS = 8
# Ids a listing walk reads at a time, doubling from the first to the last: a page of 1,000 at a million tables
# 1,933 -> 0.66 ms (92b513d); the first window reads no more than a small page needs, the last caps memory.
FIRST_WINDOW = 64
LAST_WINDOW = 4096
# Bound: the metadata cache of the pylance session DescribeTable opens versions with (catalog.py): a small
# table's manifest is a few kilobytes, so 32 MiB keeps thousands; a miss only costs a read of the manifest.
SCHEMA_SESSION_BYTES = 32 << 20
# Tables whose version lines an index keeps (describes, pokes and commits of the same tables between commits);
# a line costs ~0.1 ms at 100 versions, ~0.4 ms at 10,000 to build (issue 29, docs/benchmarks.md "Large catalogs
# in managed mode"); bound: rebuilding all 1,024 lines costs at most ~0.4 s.
VERSION_LINES = 1024
# Manifests after the rows' latest version looked for one ``stat`` (S3: HEAD) at a time before listing
# ``_versions/`` instead: versions written round the namespace are rare, and a listing of 10,000 names cost
# ~15-25 ms (issue 29); bound: at most 8 point requests before the one listing.
NEWER_PROBES = 8
# Rowed versions a managed answer checks on storage one ``stat`` (S3: HEAD, concurrently) at a time before
# listing ``_versions/`` instead (issue 37: a clean-up may have removed their manifests). A page of 20 is 19
# ``stat``s locally (~0.2 ms; the latest row is not checked); a listing of 10,000 names costs ~15-25 ms.
VERIFY_PROBES = 32
# The largest ``__manifest`` fragment a managed commit's repoint rewrites whole (the commit point's own fragment
# holds its rows: an Update instead of pylance's merge-insert, ~17 ms per append at 40 tables x 25 versions);
# a larger one (a compaction merged the row into it) gets a deletion vector. Bound: one fragment of a commit point
# (at most a group commit's rows) stays below it; the stats' "small fragment" is data/reads.COMPACTION_TARGET_ROWS.
SMALL_FRAGMENT_ROWS = 256

# -- obtaining a version's rows (snapshots.py) --------------------------------------------------------------
# Bound: rows per batch of a full read, so that a derived version lists few chunks: 16 at 2,000,000 rows where
# Lance's default of 8,192 would give 245.
SCAN_BATCH_ROWS = 1 << 17
# A version of at least this many rows that nobody read yet answers its first lookups by point reads: ~25 ms
# at 2,000,000 rows where a whole read costs ~100 ms and ~100 MB; the first answer at a million tables
# 162 -> 41 ms, VmRSS growth 165 -> 59 MB (80fe7a2, docs/engine.md "Rows in memory").
POINT_READ_ROWS = 1 << 16
# Point reads before the version is read whole: the whole read costs about as much as four of them (same).
POINT_READS = 4
# Local and memory stores: the longest "no manifest N+1" is trusted without a full listing; also the shortest
# clean-up window maintenance accepts (readers rely on it). Safety bound: the longest a version written round
# this process can stay unseen, and the same window protects the versions such a reader may still open.
REVALIDATE_AFTER = timedelta(minutes=2)
# A directory mtime is a "nothing changed" stamp only once this old: file system timestamps are coarse (ext4
# and tmpfs tick at the kernel's clock, up to 10 ms; 2 s covers FAT's 2 s and network file systems). Safety bound.
SETTLED_NANOS = 2_000_000_000

# -- stored rows (rows_store.py) ------------------------------------------------------------------------------
# Bound: rows-store entries a machine keeps per catalog (disk: 4 x the rows of one version); only the newest is
# read, the others serve processes that still read a version just before it.
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
# Rows of one group commit at most: a commit of a few thousand rows costs about as much as one of a single
# row; 32 threads declaring through one instance 141 -> 640 writes/s (700314c, CHANGELOG "Group commit").
MAX_GROUP_ROWS = 4096
# Bound: how often pylance retries a merge-insert (a rename, BatchCommitTables) before the engine re-reads and
# retries it itself (pylance rebases it over other writers' inserts of other ids; the engine's retry is the
# one that sees a true conflict, so 2 only moves work between two correct retry loops).
MERGE_INSERT_RETRIES = 2
# The first back-off after a lost commit, doubled per attempt up to 2^5 times, randomised: the length of one
# commit (2-10 ms, docs/benchmarks.md "Writers"), so that retrying writers de-synchronise within a few commits.
COMMIT_BACKOFF_SECONDS = 0.002

# -- maintenance (maintenance.py) -----------------------------------------------------------------------------
# Bound: retries of a compaction in the writers' turn (it loses to any concurrent commit; the next maintenance
# run tries again, so a lost compaction costs nothing but time).
COMPACTION_RETRIES = 2
# Compaction leaves fragments of this many rows alone: at a million tables the mean declare 40 -> 3.2 ms (a
# 270 ms rewrite of every row on every 8th commit; CHANGELOG, docs/engine.md "Rows in memory").
LARGE_FRAGMENT_ROWS = 65_536
# ... unless this share of their rows is deleted: Lance's own default (``materialize_deletions_threshold``).
DELETED_SHARE = 0.1

# -- vended credentials (credentials.py) ----------------------------------------------------------------------
# Bound: cached credentials before expired ones are forgotten (one scan per doubling: amortised O(1) per vend).
CREDENTIALS_PRUNE_AT = 4096

# -- threads (concurrency.py) --------------------------------------------------------------------------------
# Bound: threads of the engine's one pool (callbacks from pylance, a batch's storage requests): 16 S3 requests in
# flight at once keep a batch network-bound; the pool's size caps threads, never changes an answer.
WORKERS = 16

# -- the change feed (changes.py) -------------------------------------------------------------------------
# The most changes one poll answers (and the default): a page of changes is a few hundred bytes each (not
# measured beyond that).
CHANGES_LIMIT = 1000
# The most ``__manifest`` versions one poll reads: each costs its manifest and its changed fragments, so a
# consumer far behind gets answers of bounded cost and ``more=true`` (not measured).
CHANGES_VERSIONS_PER_POLL = 1000
