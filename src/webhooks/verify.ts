/**
 * The receiver-side verification helper lives in the published package `@ftis/webhooks`
 * (packages/webhooks): the service signs and verifies with that very source, so the code an
 * integrator installs and the code that signs its deliveries cannot drift apart.
 */
export * from '../../packages/webhooks/src/index';
