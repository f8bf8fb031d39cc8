/**
 * {@code kvsim blocks} scripts: JSONL operations run against one paged block manager, one JSON
 * object out per operation. Imports {@code kvsim.alloc.paged}, {@code kvsim.core} and Jackson.
 */
package kvsim.blocks;
