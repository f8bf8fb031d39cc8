package kvsim.alloc.paged;

import java.util.Arrays;

/**
 * One sequence as the {@link BlockManager} sees it: its tokens, their block hashes, its block table
 * and its scheduling bookkeeping (vLLM's {@code Request} plus the manager's {@code req_to_blocks}
 * and {@code num_cached_block} entries).
 *
 * <ul>
 *   <li>Block hashes are computed eagerly, when tokens are added, for every full block (as vLLM v1's
 *       {@code Request} keeps its {@code block_hashes}, commit ec5ef0a),
 *       and only while caching is on.
 *   <li>A request is <i>waiting</i> (no blocks, nothing computed), <i>running</i> (it has cached
 *       block bookkeeping after a successful allocation), <i>swapped</i> (its blocks sit in the host
 *       pool, v0) or <i>finished</i> (freed).
 * </ul>
 */
public final class PagedRequest {
  /** Where the request stands. */
  public enum Status {
    WAITING,
    RUNNING,
    SWAPPED,
    FINISHED
  }

  private final String id;
  /** The manager that made it: requests of one manager are refused by another. */
  final BlockManager owner;
  final byte[] lora;
  final byte[] salt;
  final String loraName;
  final String cacheSalt;

  final IntList tokens;
  long[] hashes = new long[16];
  int numHashes;
  /** Caller-supplied hash ids for the first blocks, or empty. */
  final long[] suppliedHashIds;

  int numComputedTokens;
  final IntList table = new IntList(8);
  /** vLLM's {@code num_cached_block}; -1 when the manager holds no bookkeeping (not running). */
  int numCachedBlocks = -1;
  int numPreemptions;
  Status status = Status.WAITING;

  final IntList pendingHits = new IntList(8);
  long pendingEpoch = -1;
  final IntList hostTable = new IntList(0);

  PagedRequest(BlockManager owner, String id, int[] prompt, String loraName, String cacheSalt, long[] suppliedHashIds) {
    this.owner = owner;
    this.id = id;
    this.loraName = loraName;
    this.cacheSalt = cacheSalt;
    this.lora = BlockHasher.utf8(loraName);
    this.salt = BlockHasher.utf8(cacheSalt);
    this.tokens = new IntList(Math.max(8, prompt.length + 16));
    this.tokens.addAll(prompt, 0, prompt.length);
    this.suppliedHashIds = suppliedHashIds == null ? new long[0] : suppliedHashIds.clone();
  }

  /** Returns the request's id. */
  public String id() {
    return id;
  }

  /** Returns the number of tokens (prompt plus appended output). */
  public int numTokens() {
    return tokens.size();
  }

  /** Returns the tokens whose KV is computed or scheduled. */
  public int numComputedTokens() {
    return numComputedTokens;
  }

  /** Returns the block table (block ids in sequence order); the host table when swapped. */
  public int[] blockTable() {
    return status == Status.SWAPPED ? hostTable.toArray() : table.toArray();
  }

  /** Returns the number of blocks in the table. */
  public int numBlocks() {
    return table.size();
  }

  /** Returns the id of the last block of the table, or -1 for an empty table. */
  public int lastBlock() {
    return table.size() == 0 ? -1 : table.get(table.size() - 1);
  }

  /** Returns how often the request was preempted. */
  public int numPreemptions() {
    return numPreemptions;
  }

  /** Returns where the request stands. */
  public Status status() {
    return status;
  }

  /** Returns the number of block hashes (full blocks, while caching is on). */
  public int numBlockHashes() {
    return numHashes;
  }

  /** Returns the LoRA adapter name, or null. */
  public String loraName() {
    return loraName;
  }

  /** Returns the cache salt, or null. */
  public String cacheSalt() {
    return cacheSalt;
  }

  /** Returns the token ids. */
  public int[] tokens() {
    return tokens.toArray();
  }

  long hashHi(int block) {
    return hashes[2 * block];
  }

  long hashLo(int block) {
    return hashes[2 * block + 1];
  }

  void ensureHashCapacity(int blocks) {
    if (2 * blocks > hashes.length) {
      hashes = Arrays.copyOf(hashes, Math.max(2 * blocks, hashes.length * 2));
    }
  }

  @Override
  public String toString() {
    return "request " + id;
  }
}
