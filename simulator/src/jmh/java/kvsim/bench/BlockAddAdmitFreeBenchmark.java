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
 * Requests per second through request creation, the v1 block manager's waiting path and release:
 * add a 1,000-token request, {@code admit} it (prefix lookup and {@code allocate_slots}) and {@code
 * free} it, all measured ({@link BlockAdmitFreeBenchmark} measures admit and free alone). Every
 * prompt shares its first 512 tokens (32 blocks of 16) with all others and ends in 488 tokens of its
 * own, so lookups hit 512 of 1,000 tokens (51 %). The shared blocks sit in the free queue between
 * requests (each hit unlinks them from the middle); the unique blocks cycle through a 2,048-block
 * pool and are evicted when popped. The tear-down fails if the hit rate is not about one half.
 *
 * <ul>
 *   <li>{@code hashes=tokens}: the request is hashed from its tokens when added (62 SHA-256 block
 *       hashes per request), so the figure includes hashing.
 *   <li>{@code hashes=ids}: the request carries caller-supplied block hash ids (as Mooncake traces
 *       do), so no SHA-256 runs.
 * </ul>
 *
 * <p>Not final: JMH extends benchmark classes.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class BlockAddAdmitFreeBenchmark {
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

  /** Adds, admits and frees one request. */
  @Benchmark
  public int addAdmitFree() {
    int salt = ++unique;
    PagedRequest r;
    if (hashes.equals("ids")) {
      for (int b = SHARED / BLOCK_SIZE; b < ids.length; b++) {
        ids[b] = ((long) salt << 16) | b;
      }
      r = manager.addRequest("q", prompt, null, null, ids);
    } else {
      for (int k = SHARED; k < PROMPT; k++) {
        prompt[k] = salt * 1024 + k;
      }
      r = manager.addRequest("q", prompt, null, null);
    }
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
