package kvsim.alloc.paged;

/**
 * vLLM v1's {@code PrefixCacheStats}, as {@code KVCacheManager.get_computed_blocks} ({@code
 * vllm/v1/core/kv_cache_manager.py} at commit ec5ef0a) records it: every prefix lookup adds one request, its token
 * count as queries and its hit tokens as hits; lookups of requests that were preempted before go to
 * the {@code preempted_*} counters instead. Counters are cumulative over the manager's life.
 */
public final class PrefixCacheStats {
  private long requests;
  private long queries;
  private long hits;
  private long preemptedRequests;
  private long preemptedQueries;
  private long preemptedHits;

  void record(int numTokens, int hitTokens, boolean preempted) {
    if (preempted) {
      preemptedRequests++;
      preemptedQueries += numTokens;
      preemptedHits += hitTokens;
    } else {
      requests++;
      queries += numTokens;
      hits += hitTokens;
    }
  }

  /** Returns the lookups of requests never preempted. */
  public long requests() {
    return requests;
  }

  /** Returns the tokens those lookups covered. */
  public long queries() {
    return queries;
  }

  /** Returns the tokens those lookups hit. */
  public long hits() {
    return hits;
  }

  /** Returns the lookups of preempted requests. */
  public long preemptedRequests() {
    return preemptedRequests;
  }

  /** Returns the tokens those lookups covered. */
  public long preemptedQueries() {
    return preemptedQueries;
  }

  /** Returns the tokens those lookups hit. */
  public long preemptedHits() {
    return preemptedHits;
  }
}
