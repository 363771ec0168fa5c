// Whether the console's session is inside MULTI, for the `(TX)` prompt that
// redis-cli shows (its `config.in_multi`: set by MULTI's OK, cleared by EXEC
// or DISCARD whatever they answer, EXECABORT included).

/** The state after `name` (a command name, any case) got a reply of type `replyType`. */
export function nextTxState(inTx: boolean, name: string, replyType: string | undefined): boolean {
  const n = name.toUpperCase();
  if (n === 'MULTI' && replyType !== 'error') return true;
  if (n === 'EXEC' || n === 'DISCARD') return false;
  return inTx;
}
