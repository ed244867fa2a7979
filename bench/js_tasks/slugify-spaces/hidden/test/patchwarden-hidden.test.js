import test from 'node:test';
import assert from 'node:assert/strict';
import { slugify } from '../src/slug.js';

test('hidden: one dash per run of whitespace', () => {
  assert.equal(slugify('Hello  World'), 'hello-world');
  assert.equal(slugify('a \t b\n\nc'), 'a-b-c');
  assert.equal(slugify('  padded  '), 'padded');
});
