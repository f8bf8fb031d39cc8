/**
 * {@code kvsim blocks} scripts: JSONL operations run against one paged block manager, one JSON
 * object out per operation. Imports {@code kvsim.alloc.paged}, {@code kvsim.registry}, {@code
 * kvsim.serving} (vLLM v1's scheduler, for {@code submit} and {@code step}), {@code kvsim.core} and
 * Jackson.
 */
package kvsim.blocks;
