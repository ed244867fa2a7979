import test from 'node:test';
import assert from 'node:assert/strict';
import { slugify, isSlug } from '../src/slug.js';

test('lower-cases and dashes a title', () => {
  assert.equal(slugify('Hello World'), 'hello-world');
});

test('drops punctuation', () => {
  assert.equal(slugify('Ready, set: go!'), 'ready-set-go');
});

test('recognises a slug', () => {
  assert.ok(isSlug('a-b-c'));
  assert.ok(!isSlug('a--b'));
});
