package kvsim.workload;

import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.core.OptionMap;
import kvsim.core.Tag;
import kvsim.trace.EventSource;
import kvsim.trace.TraceEvent;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;

/**
 * The random churn workload of the slab-allocator literature, exactly:
 *
 * <ul>
 *   <li>on each operation, if anything is live and a uniform draw is below the free probability
 *       (default 0.4), free a uniformly chosen live allocation;
 *   <li>otherwise allocate a whole number of MiB drawn uniformly from [min, max] (default 1 to 256);
 *   <li>a failed allocation is counted by the engine and the run goes on; it never becomes live.
 * </ul>
 *
 * <p>The generator is closed-loop: through {@link #acknowledge} it learns which allocations were
 * refused and drops them from its live set, as the literature's loop does. Written to a file with
 * {@code kvsim generate churn}, every allocation is taken as served (the file is open-loop; replaying
 * it frees refused ids as no-ops, counted as {@code frees_of_refused_count}).
 *
 * <p>Allocations are tagged {@code kv} (splittable), one operation per simulated microsecond. The
 * random stream is Commons RNG's XO_RO_SHI_RO_128_PP seeded with {@code seed}; the draw order per
 * operation is: the free test (only when something is live), then the victim index or the size.
 */
public final class ChurnGenerator implements EventSource {
  /** Simulated time between operations. */
  public static final long NANOS_PER_OP = 1_000;

  /** Default operation count. */
  public static final long DEFAULT_OPS = 1000;
  /** Default probability of a free when something is live. */
  public static final double DEFAULT_FREE_PROBABILITY = 0.4;
  /** Default smallest allocation, in MiB. */
  public static final long DEFAULT_MIN_SIZE_MIB = 1;
  /** Default largest allocation, in MiB. */
  public static final long DEFAULT_MAX_SIZE_MIB = 256;
  /** Default random seed of every generator. */
  public static final long DEFAULT_SEED = 1;

  private final long ops;
  private final double freeProbability;
  private final long minSizeMiB;
  private final long maxSizeMiB;
  private final long seed;
  private final Map<String, Object> description;
  private final UniformRandomProvider rng;

  private long[] live = new long[64]; // grown by doubling; small for the short cells of seed sweeps
  private int liveCount;
  private long op;
  private long nextId;

  /** Builds the generator from options {@code ops}, {@code free-probability}, {@code min-size-mib}, {@code max-size-mib}, {@code seed}. */
  public ChurnGenerator(OptionMap options) {
    this.ops = options.integer("ops", DEFAULT_OPS, 0, Long.MAX_VALUE);
    this.freeProbability = options.number("free-probability", DEFAULT_FREE_PROBABILITY, 0.0, 1.0);
    this.minSizeMiB = options.integer("min-size-mib", DEFAULT_MIN_SIZE_MIB, 1, 1L << 30);
    this.maxSizeMiB = options.integer("max-size-mib", DEFAULT_MAX_SIZE_MIB, 1, 1L << 30);
    this.seed = options.integer("seed", DEFAULT_SEED, Long.MIN_VALUE, Long.MAX_VALUE);
    options.requireAllUsed();
    if (maxSizeMiB < minSizeMiB) {
      throw options.bad("max-size-mib", Long.toString(maxSizeMiB), "is below min-size-mib " + minSizeMiB);
    }
    this.rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("generator", "churn");
    d.put("params", options.effective());
    this.description = d;
  }

  @Override
  public TraceEvent next() {
    if (op >= ops) {
      return null;
    }
    long t = op * NANOS_PER_OP;
    op++;
    if (liveCount > 0 && rng.nextDouble() < freeProbability) {
      int victim = rng.nextInt(liveCount);
      long id = live[victim];
      live[victim] = live[--liveCount];
      return TraceEvent.free(t, id, 0);
    }
    long sizeMiB = minSizeMiB + rng.nextLong(maxSizeMiB - minSizeMiB + 1);
    long id = nextId++;
    if (liveCount == live.length) {
      live = java.util.Arrays.copyOf(live, live.length * 2);
    }
    live[liveCount++] = id;
    return TraceEvent.alloc(t, id, sizeMiB * Bytes.MiB, Tag.KV, true, 0);
  }

  @Override
  public void acknowledge(TraceEvent event, boolean served) {
    if (!served) {
      // The refused allocation is the one just added, at the end of the live array.
      if (liveCount == 0 || live[liveCount - 1] != event.id()) {
        throw new IllegalStateException("acknowledge out of order for id " + event.id());
      }
      liveCount--;
    }
  }

  /** Closed-loop: a refused allocation is never freed. */
  @Override
  public boolean freesRefused() {
    return false;
  }

  @Override
  public String name() {
    return "churn";
  }

  @Override
  public Map<String, Object> describe() {
    return description;
  }

  /** Returns the seed in use. */
  public long seed() {
    return seed;
  }
}
