package kvsim.serving.example;

import java.util.Map;
import java.util.Set;
import kvsim.serving.KvManager;
import kvsim.serving.KvManagerFactory;
import kvsim.serving.SchedulerConfig;
import kvsim.serving.Sequence;
import kvsim.serving.ServingSystems;
import kvsim.serving.VllmV1Scheduler;

/**
 * An example serving system made in one package: vLLM v1's scheduler over an ideal KV pool, the
 * lower bound of every real manager. Each sequence holds exactly its computed tokens' slots, so
 * nothing is ever reserved or wasted; no allocator, no forking (v1 fans groups out), no time.
 * {@link #register} is the whole of adding it.
 */
public final class IdealKvManager implements KvManager, KvManager.FullSequenceFit {
  /** The system's name. */
  public static final String SYSTEM = "ideal";

  /** The ideal pool as a system part: it reads no setting of its own. */
  static final KvManagerFactory FACTORY = new KvManagerFactory() {
    @Override
    public String name() {
      return "ideal";
    }

    @Override
    public Set<String> reads() {
      return Set.of();
    }

    @Override
    public KvManager create(String system, ServingSystems.Build b, SchedulerConfig config, Map<String, Object> parts) {
      parts.put("slots", b.kvMemoryBytes() / b.kvBytesPerToken());
      return new IdealKvManager(b.kvMemoryBytes() / b.kvBytesPerToken());
    }
  };

  /** Registers the system. */
  public static void register() {
    ServingSystems.register(new ServingSystems.System(SYSTEM, "vLLM v1's scheduler over an ideal KV pool: every slot a computed token",
        VllmV1Scheduler.FACTORY, FACTORY));
  }

  private static final Sequence.KvStateKey<int[]> HELD = new Sequence.KvStateKey<>("ideal");
  private final long slots;
  private long used;

  private IdealKvManager(long slots) {
    this.slots = slots;
  }

  @Override
  public void add(Sequence s) {
    s.setKvState(HELD, new int[1]);
  }

  @Override
  public int lookup(Sequence s) {
    return 0;
  }

  @Override
  public boolean allocate(Sequence s, int numNewTokens) {
    if (used + numNewTokens > slots) {
      return false;
    }
    used += numNewTokens;
    s.kvState(HELD)[0] += numNewTokens;
    s.advanceComputedTo(s.numComputedTokens() + numNewTokens);
    return true;
  }

  /** vLLM v1's admission gate, which its scheduler asks: the whole current sequence's slots beyond those held. */
  @Override
  public boolean canFitFullSequence(Sequence s) {
    return used + s.numTokens() - s.kvState(HELD)[0] <= slots;
  }

  @Override
  public void append(Sequence s, int token) {}

  @Override
  public void preempt(Sequence s) {
    finish(s);
  }

  @Override
  public void finish(Sequence s) {
    int[] held = s.kvState(HELD);
    used -= held[0];
    held[0] = 0;
  }

  @Override
  public long capacityTokens() {
    return slots;
  }

  @Override
  public long modelledNanos() {
    return 0;
  }

  @Override
  public void breakdown(long[] out) {
    out[0] = used;
    out[1] = 0;
    out[2] = 0;
    out[3] = slots - used;
  }

  @Override
  public void checkInvariants() {
    if (used < 0 || used > slots) {
      throw new IllegalStateException(used + " of " + slots + " slots used");
    }
  }
}
