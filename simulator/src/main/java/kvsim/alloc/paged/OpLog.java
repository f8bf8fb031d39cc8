package kvsim.alloc.paged;

/**
 * What the last {@link BlockManager} operation did, block id by block id: reset at the start of
 * every operation, so a caller that wants the details reads them before the next one.
 */
public final class OpLog {
  /**
   * v0 admission verdicts: vLLM's {@code AllocStatus} ({@code vllm/core/interfaces.py} @1fb9c1b), as
   * {@code can_allocate} returns it.
   */
  public enum Admission {
    OK("ok"),
    LATER("later"),
    NEVER("never");

    private final String label;

    Admission(String label) {
      this.label = label;
    }

    /** Returns the name used in script output. */
    public String label() {
      return label;
    }
  }

  private final IntList hitBlocks = new IntList(16);
  private final IntList newBlocks = new IntList(16);
  private final IntList evicted = new IntList(16);
  private final IntList newlyCached = new IntList(16);
  private final IntList copies = new IntList(4);
  private final IntList dedups = new IntList(4);
  private final IntList mapping = new IntList(16);
  private long bytesMoved;
  private Admission admission;
  /** Whether anything was recorded since the last {@link #reset} (Note [A log reset when written]). */
  private boolean written;
  /**
   * Whether operations list their hit, new, evicted and newly cached blocks (Note [Block lists
   * on demand]); the other fields are always kept.
   */
  boolean blockLists = true; // set through setBlockLists

  // Note [A log reset when written]: every operation starts by resetting the log, and a serving
  // run makes two operations per running sequence per step (its slots, then its sampled token),
  // almost all of which record nothing: no hit, no new block, no copy. Clearing seven lists and two
  // fields each time touched seven objects for nothing, so every record goes through a method here
  // that marks the log written, and reset clears only a written log. Handing out the evicted list
  // (evictedList) counts as writing it.

  // Note [Block lists on demand]: a serving run allocates and caches some 1.5 million blocks an
  // hour and reads none of these four lists; only the counts of copies and bytes moved and the
  // admission verdict. Filling them cost a list append per block and per hit. A manager that is
  // told not to list blocks (KvBlockManager.recordBlockLists) leaves them empty, and asking for
  // them then is an error rather than an empty answer.

  /** Turns the four block lists on or off, emptying them either way. */
  void setBlockLists(boolean on) {
    clearBlockLists();
    blockLists = on;
  }

  private void clearBlockLists() {
    hitBlocks.clear();
    newBlocks.clear();
    evicted.clear();
    newlyCached.clear();
  }

  /** Lists prefix-cache hits, when blocks are listed. */
  void listHits(IntList hits) {
    if (blockLists && hits.size() > 0) {
      written = true;
      hitBlocks.addAll(hits);
    }
  }

  /** Lists one prefix-cache hit, when blocks are listed. */
  void listHit(int block) {
    if (blockLists) {
      written = true;
      hitBlocks.add(block);
    }
  }

  /** Lists a block popped from the free structures, when blocks are listed. */
  void listNew(int block) {
    if (blockLists) {
      written = true;
      newBlocks.add(block);
    }
  }

  /** Lists a block that became cached, when blocks are listed. */
  void listNewlyCached(int block) {
    if (blockLists) {
      written = true;
      newlyCached.add(block);
    }
  }

  /** The list a pool records its evictions in, or null when blocks are not listed. */
  IntList evictedList() {
    if (!blockLists) {
      return null;
    }
    written = true;
    return evicted;
  }

  /** Records a copy-on-write copy of block {@code from} into {@code to}. */
  void copied(int from, int to) {
    written = true;
    copies.add(from);
    copies.add(to);
  }

  /** Records a v0 deduplication: {@code replaced} gave way to the cached block {@code cached}. */
  void deduplicated(int replaced, int cached) {
    written = true;
    dedups.add(replaced);
    dedups.add(cached);
  }

  /** Records a swap mapping of block {@code from} to block {@code to}. */
  void mapped(int from, int to) {
    written = true;
    mapping.add(from);
    mapping.add(to);
  }

  /** Adds {@code bytes} to the bytes a swap copied. */
  void moved(long bytes) {
    written = true;
    bytesMoved += bytes;
  }

  /** Records the v0 watermark verdict of an admission or swap-in. */
  void setAdmission(Admission verdict) {
    written = true;
    admission = verdict;
  }

  private void requireLists() {
    if (!blockLists) {
      throw new IllegalStateException("this block manager does not list blocks per operation (recordBlockLists(false))");
    }
  }

  void reset() {
    if (!written) {
      return;
    }
    written = false;
    clearBlockLists();
    copies.clear();
    dedups.clear();
    mapping.clear();
    bytesMoved = 0;
    admission = null;
  }

  /** Returns the prefix-cache hits of the last lookup, in table order. */
  public int[] hitBlocks() {
    requireLists();
    return hitBlocks.toArray();
  }

  /** Returns the blocks popped from the free structures, in the order they were popped. */
  public int[] newBlocks() {
    requireLists();
    return newBlocks.toArray();
  }

  /** Returns the cached blocks evicted when they were popped, in eviction order. */
  public int[] evicted() {
    requireLists();
    return evicted.toArray();
  }

  /** Returns the blocks that became cached (entered the hash index). */
  public int[] newlyCached() {
    requireLists();
    return newlyCached.toArray();
  }

  /** Returns copy-on-write pairs, flattened: source, destination, source, destination, … */
  public int[] copies() {
    return copies.toArray();
  }

  /** Returns the number of copy-on-write copies, {@code copies().length / 2}, without building the array. */
  public int numCopies() {
    return copies.size() / 2;
  }

  /** Returns v0 deduplications, flattened: replaced block, cached block it was replaced by, … */
  public int[] dedups() {
    return dedups.toArray();
  }

  /** Returns swap mappings, flattened: from, to, from, to, … (device to host on swap-out). */
  public int[] mapping() {
    return mapping.toArray();
  }

  /** Returns the bytes a swap copied between device and host. */
  public long bytesMoved() {
    return bytesMoved;
  }

  /** Returns the v0 watermark verdict of the last admission or swap-in, or null. */
  public Admission admission() {
    return admission;
  }
}
