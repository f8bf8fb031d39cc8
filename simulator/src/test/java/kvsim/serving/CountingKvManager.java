package kvsim.serving;

import java.util.HashMap;
import java.util.Map;

/**
 * A KV manager for scheduler tests: a pool of blocks of B tokens with no prefix cache, each
 * sequence holding ceil(computed / B) blocks. Small enough to check the scheduler's rules by hand.
 */
final class CountingKvManager implements KvManager, KvManager.FullSequenceFit {
  final int blockTokens;
  final int totalBlocks;
  int freeBlocks;
  final Map<Sequence, Integer> held = new HashMap<>();
  long allocations;

  CountingKvManager(int totalBlocks, int blockTokens) {
    this.totalBlocks = totalBlocks;
    this.freeBlocks = totalBlocks;
    this.blockTokens = blockTokens;
  }

  private int blocksFor(long tokens) {
    return (int) ((tokens + blockTokens - 1) / blockTokens);
  }

  @Override
  public void add(Sequence s) {}

  @Override
  public int lookup(Sequence s) {
    return 0;
  }

  @Override
  public boolean allocate(Sequence s, int numNewTokens) {
    if (numNewTokens <= 0 || s.numComputedTokens() + numNewTokens > s.numTokens()) {
      throw new IllegalArgumentException(numNewTokens + " new tokens for " + s);
    }
    int have = held.getOrDefault(s, 0);
    int need = blocksFor((long) s.numComputedTokens() + numNewTokens) - have;
    if (need > freeBlocks) {
      return false;
    }
    freeBlocks -= need;
    held.put(s, have + need);
    s.advanceComputedTo(s.numComputedTokens() + numNewTokens);
    allocations++;
    return true;
  }

  /** The admission gate: the blocks of the sequence's whole current length beyond those it holds. */
  @Override
  public boolean canFitFullSequence(Sequence s) {
    return blocksFor(s.numTokens()) - held.getOrDefault(s, 0) <= freeBlocks;
  }

  @Override
  public void append(Sequence s, int token) {}

  @Override
  public void preempt(Sequence s) {
    freeBlocks += held.remove(s);
  }

  @Override
  public void finish(Sequence s) {
    Integer h = held.remove(s);
    freeBlocks += h == null ? 0 : h;
  }

  @Override
  public long capacityTokens() {
    return (long) totalBlocks * blockTokens;
  }

  @Override
  public long modelledNanos() {
    return 0;
  }

  @Override
  public void breakdown(long[] out) {
    long tokens = 0;
    long future = 0;
    long waste = 0;
    for (Map.Entry<Sequence, Integer> e : held.entrySet()) {
      Sequence s = e.getKey();
      long slots = (long) e.getValue() * blockTokens;
      tokens += s.numComputedTokens();
      long usable = Math.min(slots, s.finalTokens()) - s.numComputedTokens();
      future += usable;
      waste += slots - s.numComputedTokens() - usable;
    }
    out[0] = tokens;
    out[1] = future;
    out[2] = waste;
    out[3] = (long) totalBlocks * blockTokens - tokens - future - waste;
  }

  @Override
  public void checkInvariants() {
    int sum = 0;
    for (int h : held.values()) {
      sum += h;
    }
    if (sum + freeBlocks != totalBlocks) {
      throw new AssertionError("blocks do not balance: " + sum + " held + " + freeBlocks + " free != " + totalBlocks);
    }
  }
}
