import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalFiles } from '../../pipelines/connectors/files/local-files.ts'

describe('LocalFiles', () => {
  let root: string
  let files: LocalFiles
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sluice-files-'))
    files = new LocalFiles(join(root, 'files'))
    await writeFile(join(root, 'secret.txt'), 'outside')
  })
  afterAll(() => rm(root, { recursive: true, force: true }))

  it('writes, lists, reads and removes files', async () => {
    await files.put('exports/a/1.json', Buffer.from('{"a":1}\n'))
    await files.put('exports/a/2.json', Readable.from([Buffer.from('x'), Buffer.from('y')]))
    expect(await files.list('exports')).toEqual(['exports/a/1.json', 'exports/a/2.json'])
    expect((await files.readAll('exports/a/2.json')).toString()).toBe('xy')
    expect(await files.exists('exports/a/1.json')).toBe(true)
    await files.remove('exports/a/1.json')
    expect(await files.exists('exports/a/1.json')).toBe(false)
    expect(await files.list('')).toEqual(['exports/a/2.json'])
  })

  it.each(['../secret.txt', 'a/../../secret.txt', '/etc/passwd', 'a\0b', '..', ''])(
    'refuses the path %j',
    async (path) => {
      expect(() => files.resolvePath(path)).toThrow(/invalid path/)
      await expect(files.readAll(path)).rejects.toThrow(/invalid path/)
      expect(await files.exists(path)).toBe(false)
    },
  )
})
