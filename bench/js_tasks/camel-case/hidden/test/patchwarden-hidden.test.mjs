import test from 'node:test';
import assert from 'node:assert/strict';
import { toCamel } from '../src/case.mjs';

test('hidden: every separator', () => {
  assert.equal(toCamel('a_b-c_d'), 'aBCD');
  assert.equal(toCamel('plain'), 'plain');
  assert.equal(toCamel('x_1_y'), 'x1Y');
});
