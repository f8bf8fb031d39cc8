package kvsim.bench;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import kvsim.alloc.paged.BlockHasher;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Nanoseconds per block hash (Note [Block hash] in {@code BlockHasher}): one full block of 16
 * random token ids chained from the previous hash, without extra keys, as a serving run hashes
 * every block a request fills.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class BlockHashBenchmark {
  private static final int BLOCK_TOKENS = 16;

  @Param({"SHA256", "MURMUR3"})
  public String algorithm;

  private BlockHasher hasher;
  private final int[] tokens = new int[1 << 16];
  private final long[] out = new long[2];
  private int at;

  @Setup
  public void setUp() {
    hasher = new BlockHasher(BlockHasher.Algorithm.valueOf(algorithm));
    SplittableRandom r = new SplittableRandom(1);
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = r.nextInt(32_000);
    }
    out[0] = BlockHasher.NONE_HI;
    out[1] = BlockHasher.NONE_LO;
  }

  @Benchmark
  public long hashBlock() {
    at = (at + BLOCK_TOKENS) & (tokens.length - 1);
    hasher.hashBlock(out[0], out[1], tokens, at, BLOCK_TOKENS, null, null, out, 0);
    return out[0];
  }
}
