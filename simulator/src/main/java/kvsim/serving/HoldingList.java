package kvsim.serving;

/**
 * The sequences that hold memory in one KV manager, in the order they came to hold it: the order
 * a {@link java.util.LinkedHashSet} keeps (adding a member changes nothing; a member removed and
 * added again goes last), with its links kept in the sequences themselves.
 *
 * <p>Note [Holding list]: a KV manager notes the sequence holding memory after every allocation,
 * several times per iteration for each running sequence, and walks the holders for the breakdown
 * of every iteration. A hash set spent that time hashing and probing; here adding a member is one
 * field test and removing one unlinks it. A sequence belongs to one engine, so to one KV manager,
 * and so to one list at a time; the links are {@link Sequence#holdingPrev}, {@link
 * Sequence#holdingNext} and {@link Sequence#holdingList}. Walk it as {@code for (Sequence s =
 * list.first(); s != null; s = HoldingList.next(s))}, without adding or removing on the way.
 *
 * <p>Each member also carries two token counts its manager sets ({@link #setTokens}): the tokens
 * its memory holds for its future and the tokens it wastes; the list keeps their sums over the
 * members, exactly (Note [Breakdown sums] in {@link PagedKvManager}).
 */
final class HoldingList {
  private Sequence first;
  private Sequence last;
  private int size;
  private long futureTokens;
  private long wasteTokens;

  /** Adds {@code s} last unless it is a member already. */
  void add(Sequence s) {
    if (s.holdingList == this) {
      return;
    }
    if (s.holdingList != null) {
      throw new IllegalStateException(s + " holds memory in another KV manager");
    }
    s.holdingList = this;
    s.holdingFutureTokens = 0;
    s.holdingWasteTokens = 0;
    s.holdingPrev = last;
    s.holdingNext = null;
    if (last == null) {
      first = s;
    } else {
      last.holdingNext = s;
    }
    last = s;
    size++;
  }

  /** Removes {@code s} if it is a member. */
  void remove(Sequence s) {
    if (s.holdingList != this) {
      return;
    }
    Sequence prev = s.holdingPrev;
    Sequence next = s.holdingNext;
    if (prev == null) {
      first = next;
    } else {
      prev.holdingNext = next;
    }
    if (next == null) {
      last = prev;
    } else {
      next.holdingPrev = prev;
    }
    futureTokens -= s.holdingFutureTokens;
    wasteTokens -= s.holdingWasteTokens;
    s.holdingFutureTokens = 0;
    s.holdingWasteTokens = 0;
    s.holdingList = null;
    s.holdingPrev = null;
    s.holdingNext = null;
    size--;
  }

  /** Sets member {@code s}'s future and wasted tokens, moving the sums by the change. */
  void setTokens(Sequence s, long future, long waste) {
    if (s.holdingList != this) {
      throw new IllegalStateException(s + " holds no memory here");
    }
    futureTokens += future - s.holdingFutureTokens;
    wasteTokens += waste - s.holdingWasteTokens;
    s.holdingFutureTokens = future;
    s.holdingWasteTokens = waste;
  }

  /**
   * {@code steps} quiet decode steps of holders (Note [Quiet decode steps] on {@link
   * QueueScheduler}): each fills one reserved slot, so the reserved sum shrinks by one a step and
   * the waste stays. The holders' own counts lag until {@link #caughtUp}.
   */
  void tookQuietSteps(int steps) {
    futureTokens -= steps;
  }

  /** {@code s}'s own reserved count catches up with the {@code steps} quiet steps already in the sums. */
  void caughtUp(Sequence s, int steps) {
    if (s.holdingList != this) {
      throw new IllegalStateException(s + " holds no memory here");
    }
    s.holdingFutureTokens -= steps;
  }

  /** Returns the sum of the members' future tokens ({@link #setTokens}). */
  long futureTokens() {
    return futureTokens;
  }

  /** Returns the sum of the members' wasted tokens ({@link #setTokens}). */
  long wasteTokens() {
    return wasteTokens;
  }

  /** Returns whether {@code s} is a member. */
  boolean contains(Sequence s) {
    return s.holdingList == this;
  }

  /** Returns the number of members. */
  int size() {
    return size;
  }

  /** Returns the first member, or null when there is none. */
  Sequence first() {
    return first;
  }

  /** Returns the member after {@code s}, or null when {@code s} is the last. */
  static Sequence next(Sequence s) {
    return s.holdingNext;
  }
}
