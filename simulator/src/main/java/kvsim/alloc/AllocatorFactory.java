package kvsim.alloc;

/** Builds a model from its context; registry entries are usually {@code XxxAllocator::new}. */
@FunctionalInterface
public interface AllocatorFactory {
  /** Returns a fresh model over {@code context.region()}. */
  Allocator create(AllocatorContext context);
}
