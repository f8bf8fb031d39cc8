package kvsim.alloc;

import java.util.Locale;

/**
 * What shape of memory a model hands out, declared by each registry entry so that a caller (the
 * serving engine choosing a KV manager) can pick a model by what it does instead of by its class.
 * {@code AllocatorCapabilityTest} checks every registered model against what it declares.
 *
 * <ul>
 *   <li>{@link #CONTIGUOUS} and {@link #BLOCK} exclude each other: a model declares exactly one.
 *   <li>{@link #VIRTUAL} adds to {@link #CONTIGUOUS}: the single extent is a virtual range.
 * </ul>
 *
 * <p>Note [Expandable segments are not VIRTUAL]: PyTorch's expandable segments map physical pages
 * into a virtual reservation, but the pages back a segment that many allocations are carved from;
 * an allocation itself never grows. {@code pytorch-caching} is therefore {@link #CONTIGUOUS} with
 * or without them.
 */
public enum Capability {
  /**
   * Each allocation is one extent {@code [offset, offset + size)} of the region's address space (of
   * the model's virtual space where it is also {@link #VIRTUAL}): {@link Allocator#extentsOf} always
   * returns exactly one extent, for splittable requests too.
   */
  CONTIGUOUS,

  /**
   * The region is cut into fixed-size blocks (pages, slots; one size, or one per size class) and
   * an allocation is a whole number of blocks of one size that need not be adjacent: a splittable
   * request may get many non-contiguous blocks, and {@link Allocator#extentsOf} returns one extent
   * per run of adjacent blocks, each a whole number of blocks.
   */
  BLOCK,

  /**
   * Each allocation is one contiguous range of virtual addresses whose physical memory is mapped
   * in pages on demand, so it can grow in place by mapping more pages without moving (the
   * vAttention design); implies {@link #CONTIGUOUS}. The extents lie in {@link
   * Allocator#virtualSpace()}, the physical pages in the region, where {@link Allocator#layout()}
   * shows them (Note [Virtual extents] in {@link Allocator}).
   */
  VIRTUAL;

  /** Returns the lower-case name used in listings ({@code contiguous}, {@code block}, {@code virtual}). */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
