package kvsim.bench;

import java.util.concurrent.TimeUnit;
import kvsim.alloc.paged.BlockManager;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.PagedRequest;
import kvsim.alloc.paged.PrefixCacheStats;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Requests per second through the v1 block manager's {@code admit} (prefix lookup and {@code
 * allocate_slots}) and {@code free} of 1,000-token prompts with 51 % prefix hits. The request is
 * created, with its block hashes, before each invocation and outside the measurement, as vLLM
 * creates and hashes a request before its scheduler sees it ({@link BlockAddAdmitFreeBenchmark}
 * measures creation too).
 *
 * <ul>
 *   <li>Every prompt shares its first 512 tokens (32 blocks of 16) with all others and ends in 488
 *       tokens of its own, so a lookup hits 512 of 1,000 tokens; the tear-down checks the rate.
 *   <li>The shared blocks sit in the free queue between requests (each hit unlinks them from the
 *       middle); the unique blocks cycle through a 2,048-block pool and are evicted when popped.
 *   <li>{@code hashes=tokens}: block hashes are SHA-256 over the tokens; {@code hashes=ids}:
 *       caller-supplied hash ids. The measured work is the same; only the setup differs.
 * </ul>
 *
 * <p>Per-invocation setup costs two timestamps per operation, small against an operation of
 * microseconds. Not final: JMH extends benchmark classes.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class BlockAdmitFreeBenchmark {
  static final int BLOCK_SIZE = 16;
  static final int PROMPT = 1000;
  static final int SHARED = 512;

  @Param({"tokens", "ids"})
  public String hashes;

  private BlockManager manager;
  private int[] prompt;
  private long[] ids;
  private int unique;
  private long refusals;
  private PagedRequest request;

  @Setup(Level.Trial)
  public void setUp() {
    manager = BlockManager.of(BlockManagerConfig.v1(2049, BLOCK_SIZE, true));
    prompt = new int[PROMPT];
    for (int k = 0; k < SHARED; k++) {
      prompt[k] = k;
    }
    ids = new long[PROMPT / BLOCK_SIZE];
    for (int b = 0; b < SHARED / BLOCK_SIZE; b++) {
      ids[b] = b;
    }
  }

  /** Creates (and hashes) the next request, outside the measurement. */
  @Setup(Level.Invocation)
  public void nextRequest() {
    int salt = ++unique;
    if (hashes.equals("ids")) {
      for (int b = SHARED / BLOCK_SIZE; b < ids.length; b++) {
        ids[b] = ((long) salt << 16) | b;
      }
      request = manager.addRequest("q", prompt, null, null, ids);
    } else {
      for (int k = SHARED; k < PROMPT; k++) {
        prompt[k] = salt * 1024 + k;
      }
      request = manager.addRequest("q", prompt, null, null);
    }
  }

  /** Admits and frees one request. */
  @Benchmark
  public int admitFree() {
    PagedRequest r = request;
    if (!manager.admit(r)) {
      refusals++;
    }
    int blocks = r.numBlocks();
    manager.free(r);
    return blocks;
  }

  @TearDown(Level.Trial)
  public void check() {
    manager.checkInvariants();
    PrefixCacheStats s = manager.stats();
    double hitRate = (double) s.hits() / s.queries();
    if (refusals > 0 || hitRate < 0.5 || hitRate > 0.52) {
      throw new IllegalStateException("refusals " + refusals + ", hit rate " + hitRate + " (expected 0.512)");
    }
    if (manager.evictionCount() == 0) {
      throw new IllegalStateException("the pool never cycled: no cached block was evicted");
    }
  }
}
