package kvsim.core;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a memory request is for: {@code kv}, {@code activation}, {@code temp}, {@code weights}, or
 * free text. Tags are interned, so identity comparison is cheap and traces with millions of events
 * do not allocate one string per event.
 */
public final class Tag {
  private static final ConcurrentHashMap<String, Tag> INTERNED = new ConcurrentHashMap<>();

  public static final Tag KV = of("kv");
  public static final Tag ACTIVATION = of("activation");
  public static final Tag TEMP = of("temp");
  public static final Tag WEIGHTS = of("weights");

  private final String name;

  private Tag(String name) {
    this.name = name;
  }

  /** Returns the interned tag of this name (non-empty). */
  public static Tag of(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isEmpty()) {
      throw new IllegalArgumentException("a tag must not be empty");
    }
    return INTERNED.computeIfAbsent(name, Tag::new);
  }

  /** Returns whether requests with this tag may be split into pages by default (only KV may). */
  public boolean splittableByDefault() {
    return this == KV;
  }

  public String name() {
    return name;
  }

  @Override
  public String toString() {
    return name;
  }
}
