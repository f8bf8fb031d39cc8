package kvsim.alloc.paged;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;

/**
 * A deliberately naive model of the same rules, written the way vLLM's Python reads (lists,
 * dictionaries, linear scans) and sharing no code with {@link BlockManager}: block identity is the
 * whole prefix as a string (salt, LoRA name, every token up to the block's end) instead of a chained
 * hash, the v1 free queue is a linked list searched linearly, the v0 evictor is an insertion-ordered
 * dictionary scanned as {@code evictor_v2.LRUEvictor.evict} does. The property tests run both on the
 * same random scripts and require identical answers, block id for block id.
 */
final class ReferenceBlockManager {
  static final class Blk {
    final int id;
    int ref;
    String key;
    int hashedTokens;
    long lastAccessed;

    Blk(int id) {
      this.id = id;
    }
  }

  static final class Req {
    final String id;
    final String salt;
    final String lora;
    final List<Integer> tokens = new ArrayList<>();
    final List<String> keys = new ArrayList<>();
    final List<Blk> table = new ArrayList<>();
    final List<Integer> hostTable = new ArrayList<>();
    Integer numCached;
    int computed;
    int preemptions;
    String status = "WAITING";
    List<Blk> pending = new ArrayList<>();

    Req(String id, String salt, String lora) {
      this.id = id;
      this.salt = salt;
      this.lora = lora;
    }
  }

  /** What one operation did, in the same terms as {@link OpLog}. */
  static final class Log {
    List<Integer> hits = new ArrayList<>();
    List<Integer> newBlocks = new ArrayList<>();
    List<Integer> evicted = new ArrayList<>();
    List<Integer> newlyCached = new ArrayList<>();
    List<Integer> copies = new ArrayList<>();
    List<Integer> dedups = new ArrayList<>();
    List<Integer> mapping = new ArrayList<>();
    String admission;
  }

  final int n;
  final int bs;
  final boolean caching;
  final boolean v0;
  final boolean lifo;
  final int wm;
  final int maxLen;
  final Blk[] blocks;
  final LinkedList<Blk> queue = new LinkedList<>();
  final ArrayDeque<Blk> fresh = new ArrayDeque<>();
  final LinkedHashMap<Integer, Blk> evictor = new LinkedHashMap<>();
  final Map<String, LinkedHashMap<Integer, Blk>> cached = new HashMap<>();
  final ArrayDeque<Integer> hostFree = new ArrayDeque<>();
  final Map<String, Req> reqs = new LinkedHashMap<>();
  long clock;
  long sReq, sQ, sH, pReq, pQ, pH;
  Log log = new Log();

  ReferenceBlockManager(BlockManagerConfig c) {
    n = c.numBlocks();
    bs = c.blockSize();
    caching = c.enableCaching();
    v0 = c.mode() == BlockManagerConfig.Mode.V0;
    lifo = c.freeOrder() == BlockManagerConfig.FreeOrder.LIFO;
    wm = v0 ? (int) (c.watermark() * n) : 0;
    maxLen = c.maxModelLen();
    blocks = new Blk[n];
    for (int i = 0; i < n; i++) {
      blocks[i] = new Blk(i);
      if (v0) {
        fresh.addLast(blocks[i]);
      } else {
        queue.addLast(blocks[i]);
      }
    }
    if (!v0) {
      queue.removeFirst(); // the null block
    }
    for (int h = 0; h < c.numHostBlocks(); h++) {
      hostFree.addLast(n + h);
    }
  }

  private void begin() {
    log = new Log();
    clock++;
  }

  int numFree() {
    return v0 ? fresh.size() + evictor.size() : queue.size();
  }

  int usable() {
    return v0 ? n : n - 1;
  }

  List<Integer> freeOrder() {
    List<Integer> out = new ArrayList<>();
    if (!v0) {
      for (Blk b : queue) {
        out.add(b.id);
      }
      return out;
    }
    for (Blk b : fresh) {
      out.add(b.id);
    }
    // the evictor's victims in order: repeat the scan on a copy
    LinkedHashMap<Integer, Blk> copy = new LinkedHashMap<>(evictor);
    while (!copy.isEmpty()) {
      Blk v = scan(copy);
      copy.remove(v.id);
      out.add(v.id);
    }
    return out;
  }

  private static Blk scan(LinkedHashMap<Integer, Blk> table) {
    Blk best = null;
    for (Blk b : table.values()) {
      if (best == null) {
        best = b;
        continue;
      }
      if (best.lastAccessed < b.lastAccessed) {
        break;
      }
      if (best.hashedTokens < b.hashedTokens) {
        best = b;
      }
    }
    return best;
  }

  private String keyOf(Req r, int block) {
    StringBuilder sb = new StringBuilder();
    sb.append(r.salt).append('|').append(r.lora).append('|');
    for (int i = 0; i < (block + 1) * bs; i++) {
      sb.append(r.tokens.get(i)).append(',');
    }
    return sb.toString();
  }

  private void rehash(Req r) {
    if (!caching) {
      return;
    }
    while (r.keys.size() < r.tokens.size() / bs) {
      r.keys.add(keyOf(r, r.keys.size()));
    }
  }

  Blk getCached(String key) {
    LinkedHashMap<Integer, Blk> m = cached.get(key);
    return m == null || m.isEmpty() ? null : m.values().iterator().next();
  }

  private void evict(Blk b) {
    LinkedHashMap<Integer, Blk> m = cached.get(b.key);
    m.remove(b.id);
    if (m.isEmpty()) {
      cached.remove(b.key);
    }
    b.key = null;
    b.hashedTokens = 0;
    log.evicted.add(b.id);
  }

  private Blk pop() {
    Blk b;
    if (!v0) {
      b = queue.removeFirst();
      if (b.key != null) {
        evict(b);
      }
    } else if (!fresh.isEmpty()) {
      b = fresh.removeFirst();
    } else {
      b = scan(evictor);
      evictor.remove(b.id);
      evict(b);
    }
    b.ref = 1;
    b.lastAccessed = clock;
    return b;
  }

  private void touch(Blk b) {
    if (b.ref == 0) {
      if (!v0) {
        queue.remove(b);
      } else {
        evictor.remove(b.id);
      }
    }
    b.ref++;
    b.lastAccessed = clock;
  }

  private void release(List<Blk> ordered) {
    for (Blk b : ordered) {
      b.ref--;
    }
    for (Blk b : ordered) {
      if (b.ref == 0) {
        putFree(b);
      }
    }
  }

  private void putFree(Blk b) {
    if (!v0) {
      queue.addLast(b);
      return;
    }
    b.lastAccessed = clock;
    if (b.key != null) {
      evictor.put(b.id, b);
    } else if (lifo) {
      fresh.addFirst(b);
    } else {
      fresh.addLast(b);
    }
  }

  private void freeOne(Blk b) {
    b.ref--;
    if (b.ref == 0) {
      putFree(b);
    }
  }

  private void cache(Blk b, String key, int tokens) {
    b.key = key;
    b.hashedTokens = tokens;
    cached.computeIfAbsent(key, k -> new LinkedHashMap<>()).put(b.id, b);
    log.newlyCached.add(b.id);
  }

  // operations --------------------------------------------------------------------------------

  void add(String id, int[] prompt, String lora, String salt) {
    begin();
    Req r = new Req(id, salt, lora);
    for (int t : prompt) {
      r.tokens.add(t);
    }
    rehash(r);
    reqs.put(id, r);
  }

  int lookup(String id) {
    begin();
    Req r = reqs.get(id);
    lookupInternal(r);
    for (Blk b : r.pending) {
      log.hits.add(b.id);
    }
    return r.pending.size();
  }

  private void lookupInternal(Req r) {
    r.pending = new ArrayList<>();
    if (!caching) {
      return;
    }
    int max = (r.tokens.size() - 1) / bs;
    for (int i = 0; i < max && i < r.keys.size(); i++) {
      Blk b = getCached(r.keys.get(i));
      if (b == null) {
        break;
      }
      r.pending.add(b);
    }
    if (r.preemptions > 0) {
      pReq++;
      pQ += r.tokens.size();
      pH += (long) r.pending.size() * bs;
    } else {
      sReq++;
      sQ += r.tokens.size();
      sH += (long) r.pending.size() * bs;
    }
  }

  boolean allocate(String id, int numNew, int lookahead) {
    begin();
    return allocateInternal(reqs.get(id), numNew, lookahead, true);
  }

  private boolean allocateInternal(Req r, int numNew, int lookahead, boolean useHits) {
    List<Blk> hits = useHits ? r.pending : List.of();
    for (Blk b : hits) {
      log.hits.add(b.id);
    }
    long local = r.computed + (long) hits.size() * bs;
    long slots = Math.min(Math.min(local, maxLen) + numNew + lookahead, maxLen);
    int required = (int) ((slots + bs - 1) / bs);
    List<Integer> cowAt = new ArrayList<>();
    for (int j = (int) (local / bs); j <= (local + numNew - 1) / bs && j < r.table.size(); j++) {
      if (r.table.get(j).ref > 1) {
        cowAt.add(j);
      }
    }
    int need;
    if (r.numCached != null) {
      need = Math.max(required - r.table.size(), 0) + cowAt.size();
    } else {
      int evictable = 0;
      for (Blk b : hits) {
        if (b.ref == 0) {
          evictable++;
        }
      }
      need = Math.max(required - hits.size() - r.table.size(), 0) + evictable + cowAt.size();
    }
    if (need > numFree()) {
      return false;
    }
    for (Blk b : hits) {
      touch(b);
      r.table.add(b);
    }
    if (r.numCached == null) {
      r.numCached = hits.size();
    }
    r.status = "RUNNING";
    for (int j : cowAt) {
      Blk old = r.table.get(j);
      Blk nb = pop();
      freeOne(old);
      r.table.set(j, nb);
      log.copies.add(old.id);
      log.copies.add(nb.id);
      log.newBlocks.add(nb.id);
    }
    while (r.table.size() < required) {
      Blk nb = pop();
      r.table.add(nb);
      log.newBlocks.add(nb.id);
    }
    r.computed += hits.size() * bs + numNew;
    r.pending = new ArrayList<>();
    if (caching) {
      int full = Math.min(r.computed, r.tokens.size()) / bs;
      for (int i = r.numCached; i < full; i++) {
        Blk b = r.table.get(i);
        String key = r.keys.get(i);
        Blk existing = v0 ? getCached(key) : null;
        if (existing != null && existing != b) {
          touch(existing);
          r.table.set(i, existing);
          freeOne(b);
          log.dedups.add(b.id);
          log.dedups.add(existing.id);
        } else {
          cache(b, key, (i + 1) * bs);
        }
      }
      r.numCached = Math.max(r.numCached, full);
    }
    return true;
  }

  private String admission(int required) {
    if (usable() - required < wm) {
      return "NEVER";
    }
    return numFree() - required >= wm ? "OK" : "LATER";
  }

  boolean admit(String id) {
    begin();
    Req r = reqs.get(id);
    if (v0) {
      log.admission = admission((r.tokens.size() + bs - 1) / bs);
      if (!log.admission.equals("OK")) {
        return false;
      }
    }
    lookupInternal(r);
    return allocateInternal(r, r.tokens.size() - r.pending.size() * bs, 0, true);
  }

  void append(String id, int[] tokens) {
    begin();
    Req r = reqs.get(id);
    for (int t : tokens) {
      r.tokens.add(t);
    }
    rehash(r);
  }

  boolean decode(String id, int token) {
    begin();
    Req r = reqs.get(id);
    int uncomputed = r.tokens.size() - r.computed;
    if (uncomputed > 0 && !allocateInternal(r, uncomputed, 0, false)) {
      return false;
    }
    r.tokens.add(token);
    rehash(r);
    return true;
  }

  private void releaseTable(Req r) {
    List<Blk> order = new ArrayList<>(r.table);
    if (!v0) {
      java.util.Collections.reverse(order);
    }
    release(order);
    r.table.clear();
  }

  void free(String id) {
    begin();
    Req r = reqs.remove(id);
    if (r.status.equals("SWAPPED")) {
      for (int h : r.hostTable) {
        hostRelease(h);
      }
      r.hostTable.clear();
    } else {
      releaseTable(r);
    }
  }

  private void hostRelease(int h) {
    if (lifo) {
      hostFree.addFirst(h);
    } else {
      hostFree.addLast(h);
    }
  }

  void preempt(String id) {
    begin();
    Req r = reqs.get(id);
    releaseTable(r);
    r.computed = 0;
    r.numCached = null;
    r.preemptions++;
    r.pending = new ArrayList<>();
    r.status = "WAITING";
  }

  boolean reset() {
    begin();
    if (numFree() != usable()) {
      return false;
    }
    if (v0) {
      while (!evictor.isEmpty()) {
        Blk v = scan(evictor);
        evictor.remove(v.id);
        fresh.addLast(v);
      }
    }
    for (Blk b : blocks) {
      b.key = null;
      b.hashedTokens = 0;
    }
    cached.clear();
    return true;
  }

  void fork(String parentId, String childId) {
    begin();
    Req p = reqs.get(parentId);
    Req c = new Req(childId, p.salt, p.lora);
    c.tokens.addAll(p.tokens);
    c.keys.addAll(p.keys);
    c.computed = p.computed;
    c.numCached = p.numCached;
    c.status = "RUNNING";
    for (Blk b : p.table) {
      touch(b);
      c.table.add(b);
    }
    reqs.put(childId, c);
  }

  boolean swapOut(String id, long blockBytes) {
    begin();
    Req r = reqs.get(id);
    if (r.table.size() > hostFree.size()) {
      return false;
    }
    for (Blk b : r.table) {
      int h = hostFree.removeFirst();
      r.hostTable.add(h);
      log.mapping.add(b.id);
      log.mapping.add(h);
    }
    release(new ArrayList<>(r.table));
    r.table.clear();
    r.pending = new ArrayList<>();
    r.status = "SWAPPED";
    return true;
  }

  boolean swapIn(String id) {
    begin();
    Req r = reqs.get(id);
    int k = r.hostTable.size();
    log.admission = admission(k);
    if (!log.admission.equals("OK")) {
      return false;
    }
    Blk[] hit = new Blk[k];
    int need = 0;
    for (int j = 0; j < k; j++) {
      if (caching && j < r.numCached) {
        hit[j] = getCached(r.keys.get(j));
      }
      if (hit[j] == null || hit[j].ref == 0) {
        need++;
      }
    }
    if (need > numFree()) {
      log.admission = "LATER";
      return false;
    }
    for (int j = 0; j < k; j++) {
      if (hit[j] != null) {
        touch(hit[j]);
        log.hits.add(hit[j].id);
      }
    }
    for (int j = 0; j < k; j++) {
      if (hit[j] != null) {
        r.table.add(hit[j]);
        continue;
      }
      Blk b = pop();
      r.table.add(b);
      log.newBlocks.add(b.id);
      log.mapping.add(r.hostTable.get(j));
      log.mapping.add(b.id);
      if (caching && j < r.numCached) {
        cache(b, r.keys.get(j), (j + 1) * bs);
      }
    }
    for (int h : r.hostTable) {
      hostRelease(h);
    }
    r.hostTable.clear();
    r.status = "RUNNING";
    return true;
  }

  /** Returns the table of a request (host table when swapped). */
  List<Integer> table(String id) {
    Req r = reqs.get(id);
    List<Integer> out = new ArrayList<>();
    if (r.status.equals("SWAPPED")) {
      out.addAll(r.hostTable);
    } else {
      for (Blk b : r.table) {
        out.add(b.id);
      }
    }
    return out;
  }

  int numCachedBlocks() {
    int c = 0;
    for (Iterator<LinkedHashMap<Integer, Blk>> it = cached.values().iterator(); it.hasNext(); ) {
      c += it.next().size();
    }
    return c;
  }
}
