"""The page's fixed text: what changed in the engine behind the numbers, and how the write path was profiled."""

PROFILE_NOTES = """## Write-path profile (issue 15)

What a `__manifest` write costs now, profiled on local disk (cProfile, 200 DeclareTable on 300 + 300 tables,
ms per write of CPU; shares are what matters):

1. **Guarded append** (`namespace/fragments.py`) — the rows go into one new data file (pylance
   `write_fragments`, ~2.6 ms: its fixed cost, not the one row) and are committed as a Lance *Merge* of every
   fragment plus the new one with no retries (~2.2 ms): any concurrent commit fails it, so a duplicate id
   checked against that version in memory cannot slip in. A pylance `merge_insert` joined the new ids against
   the whole table instead: 6-10 ms.
2. **Marker and directory** of a declared table — `.lance-reserved` (~0.75 ms) and `mkdir` (~0.8 ms).
3. **Compaction** every 8th version with more than 4 fragments, as one copy-on-write rewrite of every row in
   the writers' turn (~6-10 ms, ~1 ms per write amortised, not in the p50). A Lance *Rewrite*
   (`compact_files`) reads for longer and lost every race with guarded appends of a busy writer.
4. **Snapshot refresh** after another writer's commit reads only the fragments added since (their keys:
   data file UUIDs and deletion file ids), not the whole table.
5. **pylance's `DataFile.path`** defines a class on every call (~50 µs): fragment keys are computed only when
   a snapshot is refreshed from another version, never on the own-commit path.

Reproduce: `python -m cProfile -s tottime` over a loop of DeclareTable on a catalog from
`benchmarks/catalog.py` (`catalog.build(root, 300)`)."""

ENGINE_NOTES = """## Engine changes behind these numbers (issue 15)

- **Guarded appends** (`namespace/fragments.py`): an insert into `__manifest` is checked against the version it
  commits on top of (in memory) and committed as a Lance *Merge* of every fragment plus one new data file,
  with no retries, so any concurrent commit fails it instead of being rebased over: ~4 ms where a pylance
  merge-insert (which joins the new ids against the whole table) took 6-10 ms. After 3 lost attempts an
  insert turns to a merge-insert, which pylance rebases over other writers' inserts of other ids (without
  that, 8 writer processes starved one writer past 20 retries).
- **Compaction as a copy-on-write rewrite** (`maintenance.compact`), taken in the writers' turn with at most 2
  retries: a Lance *Rewrite* conflicts with every guarded append and lost every race against a busy writer.
  The insert whose commit would be followed by a whole rewrite is that rewrite (`maintenance.rewrite_due`):
  one Overwrite, not an append and then a rewrite (mean declare, one thread: 2.5 -> 2.2 ms).
- **Writers of one instance take turns** (`ManifestTable._turn`, bounded wait): threads never conflict with each
  other, and a thread that waited commits on the snapshot the previous one published.
- **Incremental refresh** (`Snapshot.table`): a version that only added fragments to the cached one is read by
  reading the added fragments only.
- **Rows cache of remote catalogs** (`rows_store.py`, local tier; property `manifest_cache_dir`): a new process
  finds the rows of the newest manifest file (named, with its e-tag, by the freshness LIST) that an earlier
  process of the machine read: a reschedule-mode poke costs what a warm one does.
- **Spark**: staging jobs run with `spark.sql.execution.arrow.maxBytesPerBatch` at `Int.MaxValue` (Spark 4
  then skips a size check after every row), set and restored around the jobs.

## Engine changes behind these numbers (issue 7)

Profiled with cProfile before each change; every change keeps the answers identical and every call still
sees the latest `__manifest` version (a commit by another process is visible to the next call).

- **One scan per manifest version** (`ManifestTable._rows`): reads load the four columns of the latest
  version once and filter them in memory with `pyarrow.compute` (point lookups, `IN` lists, prefix listings);
  the table is loaded again only when `checkout_latest()` reports a new version. A full scan of the four
  columns costs less than a filtered Lance scan (which reads the same columns and evaluates SQL), so even a
  write-heavy caller pays no more than before. Listings project only `object_id` (`child_ids`) instead of
  building a row object (with JSON parsing) per child.
- **One freshness check per operation** (`ManifestTable.operation()`, entered by the `_operation` wrapper):
  the latest version was checked out up to three times per call (rows, the `_managed()` metadata check, the
  write path); now once, and again only after a failed write.
- **Freshness by the next manifest** (`ManifestTable._refresh`): Lance creates manifest N+1 atomically, so
  "no `_versions/` file for N+1" proves N is still the latest: one request (`Storage.file_exists`: a 1-byte GET
  on S3, s3fs's `exists` would add a LIST; one `stat` locally), the same at any number of versions, where
  `checkout_latest()` listed all of `_versions/` (11,481 files after 10,000 writes: ~5 ms per call locally).
  The shortcut is trusted only within `maintenance.REVALIDATE_AFTER` (2 min) of the last time N was seen as
  the latest, and clean-up refuses shorter windows, so a cleaned-up N+1 can never hide a newer version.
- **Own commits move the cache** (`ManifestTable._after_write`): when a commit is exactly the next version
  after the cached rows, the cache applies the inserted/replaced rows instead of scanning again.
- **Root listing in compatibility mode**: one names-only listing of the root (`Storage.list_names`, no
  `stat` per entry) and no per-table `.lance-deregistered` check for tables the manifest already lists.
- **Root TableExists**: the `<name>.lance` listing answers first (existence is "row or directory" either way).
- **DeclareTable**: one listing of the new location instead of `exists` + listing.
- **`__manifest` maintenance** (`namespace/maintenance.py`): compaction every 8th version when there are
  more than 4 fragments, clean-up of versions superseded more than 10 minutes ago every 256th version;
  `maintain_manifest(namespace)` on demand. Without it, every read and every merge-insert scans one more
  fragment per write (two requests each), and `checkout_latest` lists one more version file per write.

Before these changes (seed engine, same machine, 1,000 + 1,000 tables, p50 ms, ours / reference):
describe_namespace 1.91 / 4.22, namespace_exists 1.69 / 1.83, list_tables child 6.69 / 3.68, root list_tables
52.6 / 32.7, describe_table 2.11 / 2.04, table_exists 1.91 / 2.04, root table_exists 2.44 / 0.03, declare_table
10.9 / 5.4; a warm S3 poke took 4 LISTs (6 requests before the first-read cache), and reads slowed with every
write (one more fragment and version file each).

### Sensor pokes and BatchCreateTableVersions (issue 8)

- **Pokes measured as the sensors make them**: one hook call per poke (`check_table_exists` → TableExists,
  `check_table_version` → DescribeTableVersion), not TableExists + DescribeTableVersion (3 warm requests).
- **One listing per S3 directory listing** (`Storage._ls`): s3fs's `ls` follows an empty listing with a
  listing of the parent; for a root table not there yet that parent is the whole root (a LIST per 1,000 names).
  A warm existence poke of a missing root table took 5 requests at 100 tables (4 LISTs), now 2.
- **Root TableExists lists `<name>.lance` once** (`_find_table(listed=True)`): the manifest-first fallback
  repeated the listing the fast path had just made.
- **BatchCreateTableVersions** (`versions.py`): the `table_version` rows of every entry come from the cached
  `__manifest` rows in one pass (`ManifestTable.children_of`) instead of a Lance SQL scan per entry; the tables
  and their namespaces in one lookup (`batch_create_table_versions`); one names-only `_versions/` listing per
  entry serves the scheme check and the version check (was two detailed listings); one head of the staged
  manifest (was exists + head). On S3 the per-entry requests (listing, head, finalize: read, put-if-not-exists,
  delete, head) run in a thread pool (`versions._each`, 16 threads, rebuilt after a fork); locally they stay
  sequential (measured: threads were slower, 45-80 ms against 30-45 ms for 100 tables, on 2 cores). Validation
  errors still come before any write, the rows are still inserted in one merge-insert (all or nothing), errors
  still name the first offending entry in entry order, and the repoint is still one upsert for all rows."""

RUN_IT = """## Running it

`make bench` (`python -m benchmarks`) runs every section; the large catalogs (1,000,000 tables) make it take an
hour or more on 2 shared cores (see the run time per section below). `BENCH_QUICK=1 make bench` is a smoke run
(small sizes, few repetitions) that writes `benchmarks/results/quick.{md,json}` and leaves this page alone.
`BENCH_ONLY=operations,poke` runs some sections (by the prefix of their results key: operations, batch, writes,
poke, s3_writes, threads, processes, data_plane, scale, scale_managed, spark, writers, soak, page, rest) and
`BENCH_SIZES=300,1000,10000` picks the catalog sizes of the operations and poke sections; such partial runs write
`benchmarks/results/partial.json` only (the last full run's `latest.json` and this page stay as they are).
`BENCH_SCALE_SIZES=1000,10000,100000` picks the large-catalog sizes (1,000 is always measured: the flatness
baseline); `BENCH_SCALE_MANAGED_SHAPES=10000x100,100x10000` picks the managed-mode shapes (tables x versions; 10 x
100 is always measured: the flatness baseline); `BENCH_DIR=<dir>` builds the catalogs there and keeps the large
ones between runs (`scale-<N>/`, `scale-managed-<shape>/`, reused when their format matches). One section alone:
`python -m benchmarks.<module>` for scale, scale_managed, writers, soak, page and rest. `python -m benchmarks.report`
renders this page again from `latest.json`. Raw numbers of the last full run: `benchmarks/results/latest.json`."""
