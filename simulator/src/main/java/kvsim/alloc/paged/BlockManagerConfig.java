package kvsim.alloc.paged;

/**
 * The settings of one {@link BlockManager}. v1 follows vLLM at commit ec5ef0a ({@code
 * vllm/v1/core/}), v0 vLLM at commit 1fb9c1b ({@code vllm/core/block_manager_v2.py}); see {@link
 * BlockManager}.
 *
 * @param numBlocks N, vLLM's {@code num_gpu_blocks}; in v1 it counts the null block
 * @param blockSize tokens per block (B)
 * @param enableCaching whether prefix caching is on
 * @param mode v1 (default) or v0
 * @param watermark v0 admission and swap-in watermark as a fraction of N ({@code
 *     BlockSpaceManagerV2}'s {@code watermark}, used by {@code can_allocate} and {@code can_swap_in})
 * @param freeOrder v0 order of the free deque of hashless blocks (LIFO as v0's {@code
 *     vllm/core/block/naive_block.py} allocator)
 * @param numHostBlocks v0 host (CPU) blocks for swapping (v0's {@code swap_space})
 * @param maxModelLen the longest sequence, in tokens, a request may reach
 * @param bytesPerToken KV bytes per token, for the bytes a swap moves
 * @param hash the block hash function (BlockHasher's Note [Block hash]); it never changes a run
 */
public record BlockManagerConfig(
    int numBlocks,
    int blockSize,
    boolean enableCaching,
    Mode mode,
    double watermark,
    FreeOrder freeOrder,
    int numHostBlocks,
    int maxModelLen,
    long bytesPerToken,
    BlockHasher.Algorithm hash) {

  /** vLLM v0's default watermark: the {@code watermark} argument of {@code BlockSpaceManagerV2} (@1fb9c1b). */
  public static final double DEFAULT_WATERMARK = 0.01;
  /** The default bound on a sequence's length: no bound short of int overflow. */
  public static final int UNLIMITED_MODEL_LEN = Integer.MAX_VALUE / 2;
  /** Llama-2-7B in fp16: 512 KiB per token. */
  public static final long DEFAULT_BYTES_PER_TOKEN = 512 * 1024;

  /** Which vLLM generation the manager follows. */
  public enum Mode {
    /** vLLM v1: free queue, null block, no watermark, no fork or swap ({@code vllm/v1/core/} @ec5ef0a). */
    V1,
    /** vLLM v0: free deque and LRU evictor, watermark, fork, copy-on-write, swap ({@code vllm/core/} @1fb9c1b). */
    V0
  }

  /** Where v0 returns a freed hashless block in its free deque. */
  public enum FreeOrder {
    /** To the front: the most recently freed block is reused first (v0's naive allocator). */
    LIFO,
    /** To the back: the least recently freed block is reused first. */
    FIFO
  }

  /** The settings with the default block hash, SHA-256. */
  public BlockManagerConfig(
      int numBlocks, int blockSize, boolean enableCaching, Mode mode, double watermark, FreeOrder freeOrder, int numHostBlocks,
      int maxModelLen, long bytesPerToken) {
    this(numBlocks, blockSize, enableCaching, mode, watermark, freeOrder, numHostBlocks, maxModelLen, bytesPerToken,
        BlockHasher.Algorithm.SHA256);
  }

  public BlockManagerConfig {
    if (mode == null || freeOrder == null || hash == null) {
      throw new IllegalArgumentException("mode, free order and hash must be set");
    }
    if (numBlocks < (mode == Mode.V1 ? 2 : 1)) {
      throw new IllegalArgumentException(
          "num_blocks must be at least " + (mode == Mode.V1 ? "2 (the null block and one more)" : "1") + ", got " + numBlocks);
    }
    if (blockSize < 1) {
      throw new IllegalArgumentException("block_size must be positive, got " + blockSize);
    }
    if (!(watermark >= 0 && watermark < 1)) {
      throw new IllegalArgumentException("watermark must be in [0, 1), got " + watermark);
    }
    if (numHostBlocks < 0) {
      throw new IllegalArgumentException("num_host_blocks must not be negative, got " + numHostBlocks);
    }
    if (maxModelLen < 1 || maxModelLen > UNLIMITED_MODEL_LEN) {
      throw new IllegalArgumentException("max_model_len must be in [1, " + UNLIMITED_MODEL_LEN + "], got " + maxModelLen);
    }
    if (bytesPerToken < 1) {
      throw new IllegalArgumentException("bytes_per_token must be positive, got " + bytesPerToken);
    }
    if ((long) numBlocks + numHostBlocks > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("too many blocks");
    }
  }

  /** A v1 manager with no length bound and the default bytes per token. */
  public static BlockManagerConfig v1(int numBlocks, int blockSize, boolean enableCaching) {
    return new BlockManagerConfig(
        numBlocks, blockSize, enableCaching, Mode.V1, 0, FreeOrder.FIFO, 0, UNLIMITED_MODEL_LEN, DEFAULT_BYTES_PER_TOKEN);
  }

  /** A v0 manager with the default 1 % watermark and LIFO free deque. */
  public static BlockManagerConfig v0(int numBlocks, int blockSize, boolean enableCaching, int numHostBlocks) {
    return new BlockManagerConfig(
        numBlocks,
        blockSize,
        enableCaching,
        Mode.V0,
        DEFAULT_WATERMARK,
        FreeOrder.LIFO,
        numHostBlocks,
        UNLIMITED_MODEL_LEN,
        DEFAULT_BYTES_PER_TOKEN);
  }

  /** Returns v0's {@code watermark_blocks = int(watermark × N)} (0 in v1). */
  public int watermarkBlocks() {
    return mode == Mode.V1 ? 0 : (int) (watermark * numBlocks);
  }

  /** Returns the bytes of one block. */
  public long blockBytes() {
    return (long) blockSize * bytesPerToken;
  }
}
