package kvsim.alloc.paged;

/**
 * Hears a block pool's blocks change hands: a block is taken when it leaves the free structures
 * (popped for allocation, or a free cached block hit by a lookup) and released when its last
 * reference goes. Between the two the block is one live allocation of the pool's block bytes, which
 * is how a serving run writes the pool's work as an L1 trace.
 */
public interface BlockListener {
  /** Block {@code block} went from free to referenced. */
  void taken(int block);

  /** Block {@code block} lost its last reference and is free again. */
  void released(int block);
}
