// Sample batches for the editor. Generated, so large ones cost no download.

export function sample(name: string): string | null {
  switch (name) {
    case 'demo':
      return ['SET greeting "hello world"', 'GET greeting', 'INCR visits', 'INCR visits', 'LPUSH queue a b c', 'LRANGE queue 0 -1', 'DEL queue'].join('\n');
    case 'errors':
      return ['SET name pipelab', 'INCR name', 'GET name', 'NOSUCHCOMMAND x', 'PING'].join('\n');
    case 'incr1000':
      return Array.from({ length: 1000 }, () => 'INCR counter').join('\n');
    case 'set10000':
      return Array.from({ length: 10000 }, (_, i) => `SET key:${i} ${i}`).join('\n');
    default:
      return null;
  }
}
