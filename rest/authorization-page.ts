import { routes } from './routes';
import { permissions, rolePermissions } from '../src/auth/permissions';
import type { Policy } from '../src/auth/policy';

const cell = (yes: boolean) => (yes ? 'yes' : '—');

function memberCell(p: Policy): string {
  if (!p.member) return '—';
  return p.member === 'any' ? 'any member' : `\`${p.member}\``;
}

/** The principal table of docs/authorization.md, generated from the route table. */
export function authorizationPage(): string {
  const lines = [
    '# Who may call what',
    '',
    'Generated from `rest/routes.ts` by `npm run docs:authorization`; a test fails when this page is stale.',
    'The same policy objects guard the GraphQL fields, so GraphQL and REST always agree.',
    '',
    'Credentials: application API key in `X-Api-Key`; member and account-holder access tokens in',
    '`Authorization: Bearer <token>` (told apart by their audience, never interchangeable); platform',
    'operator key in `X-Operator-Key`. A request carrying more than one credential is refused (401).',
    '',
    'Answers when refused: no credential or an invalid one, 401; a valid credential of a principal the',
    'route does not accept, 403 `PRINCIPAL_NOT_ALLOWED`; a member without the permission, 403',
    '`PERMISSION_DENIED`; a key of a suspended or archived application, 403 `APPLICATION_INACTIVE`;',
    "another organization's resource, 404 as if it did not exist. Status 501: specified, built by a later issue.",
    '',
    '| Operation | Method | Path | Public | Member (permission) | API key | Account holder | Operator | Built |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of routes) {
    const p = r.policy;
    lines.push(
      `| ${r.operationId}${r.extension ? ' (extension)' : ''} | ${r.method} | \`${r.path}\` | ${cell(!!p.public)} | ${memberCell(p)} | ${cell(!!p.apiKey)} | ${cell(!!p.accountHolder)} | ${cell(!!p.operator)} | ${r.operation ? 'yes' : '501'} |`,
    );
  }
  lines.push('', '## Member roles', '', `| Role | ${permissions.map((x) => `\`${x}\``).join(' | ')} |`, `|---|${permissions.map(() => '---').join('|')}|`);
  for (const [role, granted] of Object.entries(rolePermissions)) lines.push(`| ${role} | ${permissions.map((x) => cell(granted.includes(x))).join(' | ')} |`);
  return lines.join('\n') + '\n';
}
