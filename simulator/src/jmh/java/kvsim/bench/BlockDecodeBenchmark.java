package kvsim.bench;

import java.util.concurrent.TimeUnit;
import kvsim.alloc.paged.BlockManager;
import kvsim.alloc.paged.BlockManagerConfig;
import kvsim.alloc.paged.PagedRequest;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Decode steps per second of the v1 block manager with prefix caching on and 16-token blocks: a
 * batch of 256 running requests decoded round robin, each step scheduling one token (a new block
 * every 16 steps, a block hashed and cached every 16 steps). A request that reaches 2,048 tokens is
 * freed and replaced by a new 16-token request, so the pool keeps cycling and cached blocks are
 * evicted as they are popped. Not final: JMH extends benchmark classes.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class BlockDecodeBenchmark {
  static final int BATCH = 256;
  static final int MAX_TOKENS = 2048;
  static final int BLOCK_SIZE = 16;

  private BlockManager manager;
  private PagedRequest[] running;
  private int next;
  private int token;
  private long requests;
  private long refusals;

  @Setup(Level.Trial)
  public void setUp() {
    manager = BlockManager.of(BlockManagerConfig.v1(BATCH * (MAX_TOKENS / BLOCK_SIZE + 2) + 1, BLOCK_SIZE, true));
    running = new PagedRequest[BATCH];
    for (int i = 0; i < BATCH; i++) {
      running[i] = fresh();
    }
  }

  private PagedRequest fresh() {
    int[] prompt = new int[BLOCK_SIZE];
    for (int k = 0; k < prompt.length; k++) {
      prompt[k] = token++;
    }
    PagedRequest r = manager.addRequest("r" + requests++, prompt, null, null);
    if (!manager.admit(r)) {
      throw new IllegalStateException("the pool is sized so that admission never fails");
    }
    return r;
  }

  /** One decode step of the next request of the batch. */
  @Benchmark
  public boolean decode() {
    int i = next;
    next = (i + 1) & (BATCH - 1);
    PagedRequest r = running[i];
    if (r.numTokens() >= MAX_TOKENS) {
      manager.free(r);
      r = fresh();
      running[i] = r;
    }
    boolean ok = manager.decode(r, token++);
    if (!ok) {
      refusals++;
    }
    return ok;
  }

  @TearDown(Level.Trial)
  public void check() {
    manager.checkInvariants();
    if (refusals > 0) {
      throw new IllegalStateException(refusals + " decode steps were refused; the benchmark must not run out of blocks");
    }
    if (manager.evictionCount() == 0) {
      throw new IllegalStateException("the pool never cycled: no cached block was evicted");
    }
  }
}
