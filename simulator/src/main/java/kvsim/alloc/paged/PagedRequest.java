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
  long[] hashes;
  int numHashes;
  /**
   * Blocks whose hashes were computed ahead, from tokens expected but not yet appended (Note
   * [Output hashed ahead] on {@link PromptHasher}): {@code hashes} holds them up to this block;
   * nothing ahead when it is at most {@link #numHashes}.
   */
  int hashedAhead;
  /** The buffer's entries from {@link #numTokens} up to this one hold the tokens expected, those the hashes ahead were computed from. */
  int expectedTokens;
  /** Where the expected tokens start (the prompt's length): there {@link #expectedFirst}, then {@link #expectedBase} plus their place after it. */
  int expectedFrom;
  int expectedFirst;
  int expectedBase;
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

  // Note [Token storage sized once]: a serving run adds some 20,000 requests an hour of about a
  // thousand prompt tokens each, then appends their output one token at a time. Copying the prompt
  // into a list of prompt + 16 slots and doubling it (and the block hashes, from 8 blocks) as the
  // output grew allocated about 300 MB an hour, most of the run's garbage. So the request adopts
  // its caller's token buffer (a copy of a plain prompt; the serving manager's buffer of the
  // sequence's final length) and sizes its hashes for every full block that buffer can hold. Only
  // where the tokens live changes: a longer sequence still grows both.

  PagedRequest(
      BlockManager owner, String id, int[] buffer, int promptLength, String loraName, String cacheSalt, long[] suppliedHashIds, int blockSize) {
    this(owner, id, buffer, promptLength, loraName, cacheSalt, suppliedHashIds, newHashes(buffer.length, blockSize), 0);
  }

  /** A request that adopts {@code hashes}, of which the first {@code numHashes} blocks' are filled (Note [Prompts hashed ahead]). */
  PagedRequest(BlockManager owner, String id, int[] buffer, int promptLength, String loraName, String cacheSalt, long[] suppliedHashIds, long[] hashes,
      int numHashes) {
    this.owner = owner;
    this.id = id;
    this.loraName = loraName;
    this.cacheSalt = cacheSalt;
    this.lora = BlockHasher.utf8(loraName);
    this.salt = BlockHasher.utf8(cacheSalt);
    this.tokens = IntList.adopt(buffer, promptLength);
    this.suppliedHashIds = suppliedHashIds == null ? NO_IDS : suppliedHashIds; // the manager's own copy
    this.hashes = hashes;
    this.numHashes = numHashes;
  }

  /** The hashes of a new request over a token buffer of {@code bufferLength}: room for every full block it can hold. */
  static long[] newHashes(int bufferLength, int blockSize) {
    return new long[Math.max(16, 2 * (bufferLength / blockSize))];
  }

  static final long[] NO_IDS = new long[0];

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

  /**
   * Appends {@code token}. Where it is the token expected there, the buffer holds it already and is
   * not touched; where it is not, it is written and the hashes computed ahead are dropped (Note
   * [Output hashed ahead] on {@link PromptHasher}).
   */
  void append(int token) {
    int at = tokens.size();
    if (at < expectedTokens) {
      int k = at - expectedFrom;
      if (token == (k == 0 ? expectedFirst : expectedBase + k)) {
        tokens.addPresent();
        return;
      }
      hashedAhead = 0;
      expectedTokens = 0;
    }
    tokens.add(token);
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
