import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { signUpMember } from '../../test/harness';
import { createIntent, moneyFixture, type MoneyFixture } from '../deposits/testing';

/**
 * Contract fixtures (test/contract.test.ts) of the release rule routes: a transaction's rule
 * (read, set, approve) and the application's templates. Each case builds its own integrator and
 * sandbox catalog through the public REST surface.
 */
export type { ContractCase };

export function releaseContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, random } = contractCaseHelpers(getApp);
  const fixture = () => moneyFixture(app(), { requiredConfirmations: 1 });
  const inHours = (h: number) => new Date(app().clock.now().getTime() + h * 3600_000).toISOString();
  const rule = (f: MoneyFixture) => ({
    milestones: [
      { name: 'Shipped', percentage: '40', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] },
      { name: 'Accepted', percentage: '60', mode: 'ANY', conditions: [{ kind: 'APPROVAL', party: 'MEMBER', memberId: f.member.memberId }, { kind: 'TIME_LOCK', releaseAfter: inHours(48) }] },
    ],
    splits: [{ accountId: f.beneficiaryAccountId, percentage: '100' }],
  });
  /** A transaction (AWAITING_FUNDS) with the rule above. */
  async function withRule() {
    const f = await fixture();
    const pi = await createIntent(app(), f, { releaseRule: rule(f) });
    return { f, transactionId: pi.transactionId };
  }
  const template = { name: 'Escrow, 3 days', description: 'Buyer approves or 3 days pass', milestones: [{ percentage: '100', mode: 'ANY', conditions: [{ kind: 'APPROVAL', party: 'PAYER' }, { kind: 'INSPECTION_PERIOD', durationSeconds: 259200 }] }] };
  async function withTemplate(body: Record<string, unknown> = template) {
    const f = await fixture();
    const r = await app().rest('POST', `/v1/applications/${f.applicationId}/release-rule-templates`, { headers: f.apiKeyHeaders, body });
    if (r.status !== 201) throw new Error(`template: ${r.status} ${r.text}`);
    return { f, templateId: r.headers.get('location')!.split('/').pop()! };
  }

  return {
    GetTransactionReleaseRule: [
      success('a rule with milestones and a split', async () => {
        const { f, transactionId } = await withRule();
        return { variables: { transactionId }, headers: f.apiKeyHeaders };
      }),
      success('no rule', async () => {
        const f = await fixture();
        return { variables: { transactionId: (await createIntent(app(), f)).transactionId }, headers: f.member.headers };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { transactionId } = await withRule();
        return { variables: { transactionId }, headers: (await signUpMember(app())).headers };
      }),
    ],
    SetTransactionReleaseRule: [
      success('inline, by an API key', async () => {
        const f = await fixture();
        return { variables: { transactionId: (await createIntent(app(), f)).transactionId, input: rule(f) }, headers: f.apiKeyHeaders };
      }),
      success('from a template, by a member', async () => {
        const { f, templateId } = await withTemplate({ name: 'Integrator approves', milestones: [{ percentage: '100', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] }] });
        return { variables: { transactionId: (await createIntent(app(), f)).transactionId, input: { templateId } }, headers: f.member.headers };
      }),
      failure('amounts not adding up', 'VALIDATION_FAILED', async () => {
        const f = await fixture();
        return { variables: { transactionId: (await createIntent(app(), f)).transactionId, input: { milestones: [{ amount: '1' }] } }, headers: f.apiKeyHeaders };
      }),
      failure('cancelled transaction', 'INVALID_STATE', async () => {
        const f = await fixture();
        const pi = await createIntent(app(), f);
        await app().rest('POST', `/v1/transactions/${pi.transactionId}/cancel`, { headers: f.apiKeyHeaders });
        return { variables: { transactionId: pi.transactionId, input: { milestones: [] } }, headers: f.apiKeyHeaders };
      }),
    ],
    ApproveRelease: [
      success('the integrator approves (before funding: recorded)', async () => {
        const { f, transactionId } = await withRule();
        return { variables: { transactionId }, headers: f.apiKeyHeaders };
      }),
      success('a member approves one condition by id', async () => {
        const { f, transactionId } = await withRule();
        const got = await app().rest('GET', `/v1/transactions/${transactionId}/release-rule`, { headers: f.apiKeyHeaders });
        return { variables: { transactionId, input: { conditionId: got.body.milestones[1].conditions[0].id } }, headers: f.member.headers };
      }),
      failure('nothing waits for the caller', 'INVALID_STATE', async () => {
        const f = await fixture();
        return { variables: { transactionId: (await createIntent(app(), f)).transactionId }, headers: f.apiKeyHeaders };
      }),
      failure('unknown transaction', 'NOT_FOUND', async () => ({ variables: { transactionId: random() }, headers: (await fixture()).apiKeyHeaders })),
    ],
    CreateReleaseRuleTemplate: [
      success('by an API key', async () => {
        const f = await fixture();
        return { variables: { applicationId: f.applicationId, input: template }, headers: f.apiKeyHeaders };
      }),
      failure('duplicate name', 'CONFLICT', async () => {
        const { f } = await withTemplate();
        return { variables: { applicationId: f.applicationId, input: template }, headers: f.member.headers };
      }),
      failure('percentages not adding up to 100', 'VALIDATION_FAILED', async () => {
        const f = await fixture();
        return { variables: { applicationId: f.applicationId, input: { name: 'Bad', milestones: [{ percentage: '99' }] } }, headers: f.apiKeyHeaders };
      }),
    ],
    ListReleaseRuleTemplates: [
      success('one template', async () => {
        const { f } = await withTemplate();
        return { variables: { applicationId: f.applicationId }, headers: f.apiKeyHeaders };
      }),
      success('with archived ones', async () => {
        const { f, templateId } = await withTemplate();
        await app().rest('POST', `/v1/release-rule-templates/${templateId}/archive`, { headers: f.apiKeyHeaders });
        return { variables: { applicationId: f.applicationId, includeArchived: true }, headers: f.member.headers };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { f } = await withTemplate();
        return { variables: { applicationId: f.applicationId }, headers: (await signUpMember(app())).headers };
      }),
    ],
    GetReleaseRuleTemplate: [
      success('a template', async () => {
        const { f, templateId } = await withTemplate();
        return { variables: { id: templateId }, headers: f.member.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await fixture()).apiKeyHeaders })),
    ],
    ArchiveReleaseRuleTemplate: [
      success('a template', async () => {
        const { f, templateId } = await withTemplate();
        return { variables: { id: templateId }, headers: f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const { templateId } = await withTemplate();
        return { variables: { id: templateId }, headers: (await signUpMember(app())).headers };
      }),
    ],
  };
}
