// The console's words for the API's refusals (web/src/interactive/session.ts):
// the console sends one command as the API's `text`, so the API's "text, line
// 1:" or "text: line 1," would name a field and a line a console has not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from '../tutorial/helpers.mjs';

const { refusalOf } = await importTs('interactive/session.ts');

test('a refusal loses "text, line 1:", a parse error "text: line 1,"; the code stays', () => {
  const refused = refusalOf({ code: 'refused_command', message: 'text, line 1: SELECT is refused: it changes the connection itself' }, 60_000);
  assert.equal(refused.message, 'SELECT is refused: it changes the connection itself (refused_command)');
  assert.equal(refused.ended, false);
  const parse = refusalOf({ code: 'parse_error', message: 'text: line 1, column 5: unbalanced double quote' }, 60_000);
  assert.equal(parse.message, 'column 5: unbalanced double quote (parse_error)');
  for (const r of [refused, parse]) assert.doesNotMatch(r.message, /text|line 1/);
  const lost = refusalOf({ code: 'session_lost', message: 'x' }, 60_000);
  assert.equal(lost.ended, true);
});
