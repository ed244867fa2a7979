import test from 'node:test';
import assert from 'node:assert/strict';
import { toCamel, toSnake } from '../src/case.mjs';

test('camel-cases every part', () => {
  assert.equal(toCamel('foo_bar_baz'), 'fooBarBaz');
});

test('camel-cases one part', () => {
  assert.equal(toCamel('foo-bar'), 'fooBar');
});

test('snake-cases', () => {
  assert.equal(toSnake('fooBarBaz'), 'foo_bar_baz');
});
