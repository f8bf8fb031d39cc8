package kvsim.alloc.paged;

import java.util.Arrays;

/** A text snapshot of a manager's whole observable state, to show that a refusal changed nothing. */
final class ManagerDump {
  private ManagerDump() {}

  /** Returns the free queue, cached blocks with counts, every request and the statistics. */
  static String of(BlockManager m) {
    StringBuilder sb = new StringBuilder();
    sb.append("free=").append(Arrays.toString(m.freeQueue()));
    sb.append(" cached=");
    for (BlockManager.CachedBlock c : m.cachedBlocks()) {
      sb.append(c.block()).append(':').append(c.hashPrefix()).append(':').append(c.refCnt()).append(',');
    }
    sb.append(" hostFree=").append(m.numFreeHostBlocks());
    for (PagedRequest r : m.requests()) {
      sb.append(" | ")
          .append(r.id())
          .append(' ')
          .append(r.status())
          .append(" tokens=")
          .append(r.numTokens())
          .append(" computed=")
          .append(r.numComputedTokens())
          .append(" table=")
          .append(Arrays.toString(r.blockTable()));
    }
    PrefixCacheStats s = m.stats();
    sb.append(" stats=")
        .append(s.requests())
        .append('/')
        .append(s.queries())
        .append('/')
        .append(s.hits())
        .append('/')
        .append(s.preemptedRequests())
        .append('/')
        .append(s.preemptedQueries())
        .append('/')
        .append(s.preemptedHits());
    return sb.toString();
  }

  /** Returns tokens lo … hi−1. */
  static int[] range(int lo, int hi) {
    int[] t = new int[hi - lo];
    for (int i = 0; i < t.length; i++) {
      t[i] = lo + i;
    }
    return t;
  }

  /** Returns the concatenation of token arrays. */
  static int[] concat(int[]... parts) {
    int n = 0;
    for (int[] p : parts) {
      n += p.length;
    }
    int[] out = new int[n];
    int at = 0;
    for (int[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }
}
